import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValidationError } from '@hotkey/sdk';
import { decodeClientMessage, encode, MAX_NAME_LENGTH, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { DEFAULT_RULE } from '@hotkey/sdk/rules';
import { loadHubConfig, parseHubConfig } from './config.ts';

function fieldOf(input: unknown): string {
  try {
    parseHubConfig(input);
  } catch (err) {
    assert.instance(err, ValidationError);
    assert.is((err as ValidationError).code, 'HK_ERR_CONFIG');
    assert.ok((err as ValidationError).message.startsWith(`${(err as ValidationError).field}: `));
    return (err as ValidationError).field;
  }
  return assert.unreachable('accepted') as never;
}

test('a valid config gets rule defaults and keeps tokens', () => {
  const c = parseHubConfig({
    apps: { shop: { token: 't', rules: [{ match: 'item:*', threshold: 500 }] }, blog: {} },
    adminToken: 'a',
    dashboardToken: 'd',
  });
  assert.equal(c.apps.shop, { token: 't', rules: [{ ...DEFAULT_RULE, match: 'item:*', threshold: 500 }] });
  assert.equal(c.apps.blog, { rules: [] });
  assert.is(c.adminToken, 'a');
  assert.is(c.dashboardToken, 'd');
});

test('validation names the field', () => {
  assert.is(fieldOf(null), 'config');
  assert.is(fieldOf([]), 'config');
  assert.is(fieldOf({}), 'apps');
  assert.is(fieldOf({ apps: {}, extra: 1 }), 'extra');
  assert.is(fieldOf({ apps: { shop: 1 } }), 'apps.shop');
  assert.is(fieldOf({ apps: { shop: { rule: [] } } }), 'apps.shop.rule');
  assert.is(fieldOf({ apps: { shop: { token: 5 } } }), 'apps.shop.token');
  assert.is(fieldOf({ apps: { shop: { rules: {} } } }), 'apps.shop.rules');
  assert.is(
    fieldOf({
      apps: {
        shop: {
          rules: [
            { match: 'a', threshold: 1 },
            { match: 'b', threshold: 'x' },
          ],
        },
      },
    }),
    'apps.shop.rules[1].threshold',
  );
  assert.is(
    fieldOf({ apps: { shop: { rules: [{ match: 'a', threshold: 1, hotMs: 1 }] } } }),
    'apps.shop.rules[0].hotMs',
  );
  assert.is(fieldOf({ apps: { '': {} } }), 'apps.');
  assert.is(fieldOf({ apps: { ['x'.repeat(300)]: {} } }), `apps.${'x'.repeat(300)}`);
  assert.is(fieldOf({ apps: {}, adminToken: '' }), 'adminToken');
  assert.is(fieldOf({ apps: {}, dashboardToken: 1 }), 'dashboardToken');
});

test('files: unreadable and non-JSON files are config errors', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hotkey-config-'));
  try {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"apps": ');
    await loadHubConfig(bad).then(
      () => assert.unreachable(),
      (err) => {
        assert.instance(err, ValidationError);
        assert.match(err.message, /not valid JSON/);
      },
    );
    await loadHubConfig(join(dir, 'none.json')).then(
      () => assert.unreachable(),
      (err) => assert.match(err.message, /cannot read/),
    );
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ apps: { a: { rules: [{ match: 'k', threshold: 2 }] } } }));
    assert.is((await loadHubConfig(good)).apps.a!.rules[0]!.threshold, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a config token must fit in a Hello: longer ones are a config error naming the field', () => {
  const longest = 't'.repeat(MAX_NAME_LENGTH);
  const c = parseHubConfig({ apps: { shop: { token: longest } }, adminToken: longest, dashboardToken: longest });
  assert.is(c.apps.shop?.token, longest);
  // the longest accepted token is one a client can present
  const hello = encode({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', token: longest, instance: 'i', sdk: 'x' });
  assert.is((decodeClientMessage(hello) as { token?: string }).token, longest);
  const tooLong = `${longest}t`;
  assert.throws(() =>
    decodeClientMessage(
      encode({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', token: tooLong, instance: 'i', sdk: 'x' }),
    ),
  );
  assert.is(fieldOf({ apps: { shop: { token: tooLong } } }), 'apps.shop.token');
  assert.is(fieldOf({ apps: {}, adminToken: tooLong }), 'adminToken');
  assert.is(fieldOf({ apps: {}, dashboardToken: tooLong }), 'dashboardToken');
});

test('key privacy: apps hash or redact their keys; bad values name the field; hash needs a secret', () => {
  const secret = 'k'.repeat(16);
  const noEnv = {};
  const parse = (input: unknown, env: Record<string, string> = noEnv) => parseHubConfig(input, undefined, env);
  const field = (input: unknown, env: Record<string, string> = noEnv) => {
    const err = (() => {
      try {
        parse(input, env);
      } catch (e) {
        return e as ValidationError;
      }
      return assert.unreachable('accepted') as never;
    })();
    assert.instance(err, ValidationError);
    assert.is(err.code, 'HK_ERR_CONFIG');
    return [err.field, err.message] as const;
  };
  const c = parse({
    keySecret: secret,
    apps: { shop: { keys: 'hash', keepPrefix: ['session:'] }, blog: { keys: 'redact' }, wiki: { keys: 'plain' } },
  });
  assert.equal(c.apps.shop, { rules: [], keys: 'hash', keepPrefix: ['session:'] });
  assert.is(c.apps.blog?.keys, 'redact');
  assert.is(c.keySecret, secret);
  // the secret may come from the environment instead; the file wins
  assert.is(
    parse({ apps: { shop: { keys: 'hash' } } }, { HOTKEY_KEY_SECRET: 'e'.repeat(20) }).keySecret,
    'e'.repeat(20),
  );
  assert.is(parse({ keySecret: secret, apps: {} }, { HOTKEY_KEY_SECRET: 'e'.repeat(20) }).keySecret, secret);
  // redact needs no secret
  assert.is(parse({ apps: { blog: { keys: 'redact' } } }).keySecret, undefined);

  assert.is(field({ keySecret: secret, apps: { shop: { keys: 'md5' } } })[0], 'apps.shop.keys');
  assert.is(field({ keySecret: secret, apps: { shop: { keys: true } } })[0], 'apps.shop.keys');
  assert.is(field({ apps: { shop: { keepPrefix: 'session:' } } })[0], 'apps.shop.keepPrefix');
  assert.is(field({ apps: { shop: { keepPrefix: ['a:', 7] } } })[0], 'apps.shop.keepPrefix[1]');
  assert.is(field({ apps: { shop: { keepPrefix: [''] } } })[0], 'apps.shop.keepPrefix[0]');
  const [f, message] = field({ apps: { shop: { keys: 'hash' } } });
  assert.is(f, 'keySecret');
  assert.match(message, /apps\.shop\.keys/);
  assert.match(message, /HOTKEY_KEY_SECRET/);
  assert.is(field({ keySecret: 'short', apps: {} })[0], 'keySecret');
  assert.is(field({ keySecret: 42, apps: {} })[0], 'keySecret');
  assert.is(field({ apps: {} }, { HOTKEY_KEY_SECRET: 'short' })[0], 'HOTKEY_KEY_SECRET');
});

test.run();
