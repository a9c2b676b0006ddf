/**
 * The guide test of a stack whose example opens a store in this process (`open()` returns
 * `{ get, set, close }`): two instances of it, the key made hot by reading it, then
 *   - the steady state: reads of the hot key on both instances send Redis no command;
 *   - read-your-writes: 0 stale reads on B after writes acknowledged on A, each made while B held
 *     the old value in memory.
 */
import type { Test } from 'uvu';
import * as assert from 'uvu/assert';
import type { GuideFixture } from './fixture.ts';
import { commandsDuring, staleAfterWrites, untilServedLocally, type Store } from './guarantees.ts';

export interface Opened<V> extends Store<V> {
  close(): Promise<void>;
}

export const ROUNDS = 40;

export function clientGuide<V>(
  suite: Test,
  fx: GuideFixture,
  name: string,
  open: () => Promise<Opened<V>>,
  value: (i: number) => V,
  commands: () => Promise<number> = fx.commands,
): void {
  suite(`${name}: a hot key is answered from memory on both instances, and a write on A is B's next read`, async () => {
    const a = await open();
    fx.defer(() => a.close());
    const b = await open();
    fx.defer(() => b.close());
    const id = 'flash';
    await a.set(id, value(0));
    assert.equal(await b.get(id), value(0), 'B reads what A wrote');

    await untilServedLocally([a, b], id, commands);
    const steady = await commandsDuring([a, b], id, value(0), commands);
    console.log(`  ${name}: 400 reads of the hot key, ${steady} commands reached the source`);
    assert.is(steady, 0, 'no command reached the source in the steady state');

    const s = await staleAfterWrites(a, b, id, value, ROUNDS, commands);
    console.log(
      `  ${name}: ${s.stale} stale of ${s.rounds} on B after writes on A (B held the key in memory in ${s.heldInMemory})`,
    );
    assert.is(s.stale, 0, 'B read every write A acknowledged');
    assert.is(s.staleOwn, 0, 'A read its own writes');
    assert.ok(s.heldInMemory >= ROUNDS / 2, `B answered from memory before most writes (${s.heldInMemory})`);
  });
}
