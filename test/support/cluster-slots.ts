/**
 * Resharding one hash slot of a test RedisCluster by hand, with the steps Redis's cluster
 * specification gives for it (what `redis-cli --cluster reshard` sends): the target IMPORTING,
 * the source MIGRATING, each key of the slot MIGRATEd, then `CLUSTER SETSLOT <slot> NODE <target>`
 * on the target, the source and every other node, so that no node waits for gossip to learn it.
 * Clients are not told: a Cluster client keeps its slot map until a MOVED (or its own refresh).
 */
import type { RedisCluster } from './redis-cluster.ts';

/** The port of the master serving `slot`, by the node on `askPort`'s CLUSTER NODES. */
export function slotOwner(rc: RedisCluster, askPort: number, slot: number): number {
  for (const line of rc.cli(askPort, 'cluster', 'nodes').split('\n')) {
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
export function moveSlot(rc: RedisCluster, slot: number, to: number, nodes: readonly number[]): void {
  const from = slotOwner(rc, to, slot);
  if (from === to) return;
  const id = (port: number) => rc.cli(port, 'cluster', 'myid').trim();
  const [fromId, toId] = [id(from), id(to)];
  const ok = (port: number, ...args: string[]) => {
    const reply = rc.cli(port, ...args).trim();
    if (reply !== 'OK' && reply !== 'NOKEY') throw new Error(`${args.join(' ')} on ${port}: ${reply}`);
  };
  ok(to, 'cluster', 'setslot', String(slot), 'importing', fromId);
  ok(from, 'cluster', 'setslot', String(slot), 'migrating', toId);
  for (;;) {
    const keys = rc.cli(from, 'cluster', 'getkeysinslot', String(slot), '100').split('\n').filter(Boolean);
    if (keys.length === 0) break;
    ok(from, 'migrate', '127.0.0.1', String(to), '', '0', '5000', 'KEYS', ...keys);
  }
  ok(to, 'cluster', 'setslot', String(slot), 'node', toId);
  ok(from, 'cluster', 'setslot', String(slot), 'node', toId);
  for (const port of nodes)
    if (port !== from && port !== to) ok(port, 'cluster', 'setslot', String(slot), 'node', toId);
}
