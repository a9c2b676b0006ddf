import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { asPlainRead, hook, unguarded, unhooked } from './unhooked.ts';

test('each scope restores the flag it found, nested or thrown out of', () => {
  const seen: boolean[] = [];
  asPlainRead(() => {
    asPlainRead(() => seen.push(hook.plain));
    seen.push(hook.plain); // still inside the outer plain read
  });
  seen.push(hook.plain);
  assert.equal(seen, [true, true, false]);
  unguarded(() => {
    unguarded(() => undefined);
    assert.ok(hook.unguarded && hook.bypass, 'the outer scope holds after the inner one ended');
  });
  assert.ok(!hook.unguarded && !hook.bypass);
  assert.throws(() =>
    unhooked(() =>
      asPlainRead(() => {
        throw new Error('boom');
      }),
    ),
  );
  assert.equal(hook, { bypass: false, unguarded: false, plain: false });
});

test.run();
