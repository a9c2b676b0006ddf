import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mergeQps, parseQpsHistory } from './key-qps.ts';

test('parses the API answer and skips malformed or out-of-order points', () => {
  const h = parseQpsHistory({
    app: 'shop',
    key: 'k',
    hub: 'hub-a',
    stepMs: 1000,
    points: [[1000, 5], 'x', [2000, 'y'], [500, 3], [3000, -1], [4000, 7]],
  });
  assert.equal(h, { hub: 'hub-a', stepMs: 1000, times: [1000, 3000, 4000], values: [5, 0, 7] });
  assert.throws(() => parseQpsHistory({ error: { code: 'HK_ERR_AUTH' } }), TypeError);
  assert.throws(() => parseQpsHistory(null), TypeError);
});

test('the page samples continue the hub history without overlap', () => {
  const history = { hub: 'h', stepMs: 1000, times: [1000, 2000, 3000], values: [10, 20, 30] };
  const merged = mergeQps(history, [2500, 3000, 3400, 4400], [99, 99, 34, 44], 0);
  assert.equal(merged, { times: [1000, 2000, 3000, 3400, 4400], values: [10, 20, 30, 34, 44] });
});

test('only points from `since` on; no history means the page samples alone', () => {
  const history = { hub: 'h', stepMs: 1000, times: [1000, 2000, 3000], values: [10, 20, 30] };
  assert.equal(mergeQps(history, [4000], [40], 2500), { times: [3000, 4000], values: [30, 40] });
  assert.equal(mergeQps(undefined, [1, 2], [5, 6], 0), { times: [1, 2], values: [5, 6] });
  const empty = { hub: 'h', stepMs: 1000, times: [], values: [] };
  assert.equal(mergeQps(empty, [1, 2], [5, 6], 0), { times: [1, 2], values: [5, 6] });
});

test.run();
