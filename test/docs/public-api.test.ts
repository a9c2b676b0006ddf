/**
 * The public API changes only with a CHANGELOG line: every export of every package entry is
 * compared with test/docs/public-api.json (the API as last released); each name added to or
 * removed from an entry, and each entry added or removed, must appear in backticks in the
 * CHANGELOG's [Unreleased] section. At a release, `node --import tsx test/support/public-api.ts
 * --write` records the new API. The SDK's root entry also stays small: what a service calls.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { publicApi, RECORD, root } from '../support/public-api.ts';

/** Values the SDK root may export, deprecated re-exports aside: what a service calls. */
const SDK_ROOT_VALUES = 12;

/**
 * Root re-exports kept for one minor version for names whose only published home was the root
 * (they live in `@hotkey/sdk/internal` now); not counted against SDK_ROOT_VALUES.
 */
const SDK_ROOT_DEPRECATED = ['AccessWindow', 'LocalCache', 'SDK_NAME', 'hashString'];

const api = publicApi();
const recorded = JSON.parse(readFileSync(RECORD, 'utf8')) as Record<string, string[]>;

function unreleased(): string {
  const text = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
  const start = text.indexOf('\n## [Unreleased]');
  assert.ok(start >= 0, 'CHANGELOG.md has an [Unreleased] section');
  const end = text.indexOf('\n## [', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

const bare = (name: string) => name.replace(/^type /, '');

test('every export added or removed since the last release is named in the CHANGELOG', () => {
  const changelog = unreleased();
  const missing: string[] = [];
  const need = (what: string, name: string) => {
    if (!changelog.includes(`\`${name}\``)) missing.push(`${what}: \`${name}\``);
  };
  for (const entry of new Set([...Object.keys(api), ...Object.keys(recorded)])) {
    const now = api[entry];
    const then = recorded[entry];
    if (now === undefined || then === undefined) need(now === undefined ? 'entry removed' : 'entry added', entry);
    for (const name of now ?? []) if (!then?.includes(name)) need(`${entry} exports`, bare(name));
    for (const name of then ?? []) if (!now?.includes(name)) need(`${entry} no longer exports`, bare(name));
  }
  assert.equal(missing, [], `name these in CHANGELOG.md [Unreleased] (in backticks):\n  ${missing.join('\n  ')}`);
});

test('the SDK root exports what a service calls, at most 12 values', () => {
  const values = (api['@hotkey/sdk'] ?? []).filter((n) => !n.startsWith('type ') && !SDK_ROOT_DEPRECATED.includes(n));
  assert.ok(values.length <= SDK_ROOT_VALUES, `@hotkey/sdk exports ${values.length} values: ${values.join(', ')}`);
  for (const name of SDK_ROOT_DEPRECATED)
    assert.ok(api['@hotkey/sdk/internal']?.includes(name), `${name} has its new home in @hotkey/sdk/internal`);
});

test('the hub package exports no internals', () => {
  const hub = api['@hotkey/hub'] ?? [];
  for (const internal of ['Aggregator', 'HubCore'])
    assert.not.ok(hub.includes(internal), `@hotkey/hub exports ${internal}`);
  for (const embedder of ['startHub', 'RedisCoordinator', 'LocalCoordinator', 'loadHubConfig', 'parseHubConfig'])
    assert.ok(hub.includes(embedder), `@hotkey/hub exports ${embedder}`);
});

test('the lister reads types and values apart', () => {
  const sdk = api['@hotkey/sdk'] ?? [];
  assert.ok(sdk.includes('HotKeyClient'));
  assert.ok(sdk.includes('type ClientOptions'));
  assert.not.ok(sdk.includes('ClientOptions'));
});

test.run();
