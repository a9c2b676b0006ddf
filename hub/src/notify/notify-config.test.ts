import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValidationError } from '@hotkey/sdk';
import { makeTestPki } from '../../../test/support/tls-certs.ts';
import { NOTIFY_DEFAULTS, parseNotify } from './notify-config.ts';

function fieldOf(input: unknown, baseDir?: string): string {
  try {
    parseNotify(input, 'notify', baseDir);
  } catch (err) {
    assert.instance(err, ValidationError);
    assert.is((err as ValidationError).code, 'HK_ERR_CONFIG');
    return (err as ValidationError).field;
  }
  return assert.unreachable('accepted') as never;
}

const ok = { url: 'https://hooks.example.com/x', events: ['promote'] };

test('a target gets its defaults; events are deduplicated', () => {
  const [t] = parseNotify([{ ...ok, events: ['promote', 'fenced', 'promote'], apps: ['shop'], secret: 's' }]);
  assert.equal(t, { ...NOTIFY_DEFAULTS, url: ok.url, events: ['promote', 'fenced'], apps: ['shop'], secret: 's' });
});

test('bad targets are refused naming the field', () => {
  assert.is(fieldOf({}), 'notify');
  assert.is(fieldOf(['x']), 'notify[0]');
  assert.is(fieldOf([{ ...ok, url: 'ws://hooks.example.com' }]), 'notify[0].url');
  assert.is(fieldOf([{ ...ok, url: 'not a url' }]), 'notify[0].url');
  assert.is(fieldOf([{ ...ok, url: 'https://user:pw@hooks.example.com' }]), 'notify[0].url');
  assert.is(fieldOf([{ ...ok, url: 42 }]), 'notify[0].url');
  assert.is(fieldOf([ok, { ...ok, events: [] }]), 'notify[1].events');
  assert.is(fieldOf([{ ...ok, events: ['promote', 'explode'] }]), 'notify[0].events[1]');
  assert.is(fieldOf([{ ...ok, apps: 'shop' }]), 'notify[0].apps');
  assert.is(fieldOf([{ ...ok, secret: '' }]), 'notify[0].secret');
  assert.is(fieldOf([{ ...ok, timeoutMs: 10 }]), 'notify[0].timeoutMs');
  assert.is(fieldOf([{ ...ok, maxQueue: 1.5 }]), 'notify[0].maxQueue');
  assert.is(fieldOf([{ ...ok, retries: '3' }]), 'notify[0].retries');
  assert.is(fieldOf([{ ...ok, header: 'x' }]), 'notify[0].header');
  assert.is(fieldOf(Array(33).fill(ok)), 'notify');
});

test('ca: read relative to the base folder, must be PEM, https only', () => {
  const pki = makeTestPki();
  const dir = mkdtempSync(join(tmpdir(), 'hotkey-notify-'));
  try {
    writeFileSync(join(dir, 'ca.pem'), pki.ca);
    writeFileSync(join(dir, 'junk.pem'), 'not a certificate');
    const [t] = parseNotify([{ ...ok, ca: 'ca.pem' }], 'notify', dir);
    assert.is(t!.caPem?.toString(), pki.ca);
    assert.is(fieldOf([{ ...ok, ca: 'missing.pem' }], dir), 'notify[0].ca');
    assert.is(fieldOf([{ ...ok, ca: 'junk.pem' }], dir), 'notify[0].ca');
    assert.is(fieldOf([{ ...ok, url: 'http://127.0.0.1:1', ca: 'ca.pem' }], dir), 'notify[0].ca');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    pki.remove();
  }
});

test.run();
