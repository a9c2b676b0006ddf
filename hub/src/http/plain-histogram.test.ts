import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Histogram, Registry } from 'prom-client';
import { PlainHistogram } from './plain-histogram.ts';

const BUCKETS = [0.001, 0.0025, 0.01, 0.5, 1];
/** on a bound, between bounds, under the first, past the last, and zero */
const VALUES = [0.001, 0.0007, 0.002, 0.0025, 0.3, 0.5, 1, 1.5, 40, 0, 0.01];

test('renders what prom-client renders for the same observations (bounds inclusive, +Inf, sum, count, label order)', async () => {
  const ours = new Registry();
  const theirs = new Registry();
  const help = 'Time from a request to its ack.';
  const plain = new PlainHistogram({ name: 'x_seconds', help, buckets: BUCKETS, registers: [ours] });
  const prom = new Histogram({ name: 'x_seconds', help, labelNames: ['app'], buckets: BUCKETS, registers: [theirs] });
  // a label value that needs escaping, and an app that was asked for but never observed
  for (const [i, v] of VALUES.entries()) {
    const app = i % 3 === 0 ? 'shop' : 'blog "b"\\';
    plain.labels(app).observe(v);
    prom.labels(app).observe(v);
  }
  plain.labels('idle');
  assert.is(await ours.metrics(), await theirs.metrics());
  ours.resetMetrics();
  theirs.resetMetrics();
  assert.is(await ours.metrics(), await theirs.metrics());
});

test('a value that is not a finite number throws, as prom-client does', () => {
  const h = new PlainHistogram({ name: 'y_seconds', help: 'h', buckets: BUCKETS, registers: [new Registry()] });
  assert.throws(() => h.labels('a').observe(Number.NaN), /finite/);
  assert.throws(() => h.labels('a').observe(Number.POSITIVE_INFINITY), /finite/);
  assert.is(h.labels('a').count, 0);
});

test.run();
