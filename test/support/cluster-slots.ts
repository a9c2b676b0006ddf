/**
 * Resharding one hash slot of a test RedisCluster by hand, with the steps Redis's cluster
 * specification gives for it (what `redis-cli --cluster reshard` sends): the target IMPORTING,
 * the source MIGRATING, each key of the slot MIGRATEd, then `CLUSTER SETSLOT <slot> NODE <target>`
 * on the target, the source and every other node, so that no node waits for gossip to learn it.
 * Clients are not told: a Cluster client keeps its slot map until a MOVED (or its own refresh).
 * Every redis-cli call is asynchronous (RedisCluster.run): the clients of the test process keep
 * running while the slot moves.
 */
import type { RedisCluster } from './redis-cluster.ts';

/** The port of the master serving `slot`, by the node on `askPort`'s CLUSTER NODES. */
export async function slotOwner(rc: RedisCluster, askPort: number, slot: number): Promise<number> {
  for (const line of (await rc.run(askPort, 'cluster', 'nodes')).split('\n')) {
    const [, address, flags, , , , , , ...ranges] = line.trim().split(' ');
    if (!flags?.includes('master')) continue;
    for (const range of ranges) {
      if (range.startsWith('[')) continue; // a slot being migrated or imported
      const [from, to = from] = range.split('-').map(Number);
      if (from !== undefined && to !== undefined && slot >= from && slot <= to)
        return Number(/:(\d+)/.exec(address!)?.[1]);
    }
  }
  throw new Error(`no master serves slot ${slot}`);
}

/**
 * Moves `slot`, with its keys, to the master on `to`. `nodes`: every node's port, `to` among them
 * (each is told the new owner).
 */
export async function moveSlot(rc: RedisCluster, slot: number, to: number, nodes: readonly number[]): Promise<void> {
  const from = await slotOwner(rc, to, slot);
  if (from === to) return;
  const id = async (port: number) => (await rc.run(port, 'cluster', 'myid')).trim();
  const [fromId, toId] = [await id(from), await id(to)];
  const ok = async (port: number, ...args: string[]) => {
    const reply = (await rc.run(port, ...args)).trim();
    if (reply !== 'OK' && reply !== 'NOKEY') throw new Error(`${args.join(' ')} on ${port}: ${reply}`);
  };
  await ok(to, 'cluster', 'setslot', String(slot), 'importing', fromId);
  await ok(from, 'cluster', 'setslot', String(slot), 'migrating', toId);
  for (;;) {
    const keys = (await rc.run(from, 'cluster', 'getkeysinslot', String(slot), '100')).split('\n').filter(Boolean);
    if (keys.length === 0) break;
    await ok(from, 'migrate', '127.0.0.1', String(to), '', '0', '5000', 'KEYS', ...keys);
  }
  await ok(to, 'cluster', 'setslot', String(slot), 'node', toId);
  await ok(from, 'cluster', 'setslot', String(slot), 'node', toId);
  for (const port of nodes)
    if (port !== from && port !== to) await ok(port, 'cluster', 'setslot', String(slot), 'node', toId);
}
