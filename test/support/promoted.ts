/**
 * The hub's promotion of a key, as every SDK of a group hears it: the 'promote' event. `isHot()`
 * alone does not say the hub decided: an instance also serves a key that surges on it locally
 * before any promotion (sdk/src/client/read/surge-local.ts). Listen before the traffic starts.
 *
 *   const promoted = promotions(group, 'item:1');
 *   const driver = drive(group, 'item:1', 600);
 *   const qps = await promoted.all(4000); // every SDK's promote info.qps, or it throws
 */
import type { HotKeyClient } from '@hotkey/sdk';
import { within } from './wait.ts';

export interface Promotions {
  /** the qps each SDK's first promote event of the key carried, once every SDK heard one */
  all(timeoutMs: number): Promise<number[]>;
  /** how many of the SDKs heard a promote event of the key so far */
  readonly count: number;
}

export function promotions(group: readonly HotKeyClient[], key: string): Promotions {
  let count = 0;
  const each = group.map(
    (hk) =>
      new Promise<number>((resolve) => {
        // removed once heard: a test that waits for many keys on one client adds no listener for good
        const listener = (k: string, info: { qps: number }) => {
          if (k !== key) return;
          count++;
          hk.off('promote', listener);
          resolve(info.qps);
        };
        hk.on('promote', listener);
      }),
  );
  return {
    all: (timeoutMs) => within(`a promote event of ${key} at every SDK`, Promise.all(each), timeoutMs),
    get count() {
      return count;
    },
  };
}
