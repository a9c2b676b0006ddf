/**
 * A real cluster for the multi-process tests: one redis-server, N `hotkey-hub` processes
 * (HubProcess, the one process starter) joined through it, SDK clients in this process, and
 * steady traffic. Every wait has a deadline and everything started here is stopped by `close()`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HotKeyClient, type ClientOptions } from '@hotkey/sdk';
import { Ownership } from '@hotkey/sdk/ownership';
import { RedisServer } from '../support/redis-server.ts';
import { HubProcess } from '../support/hub-process.ts';
import type { HubEvent } from '../../hub/src/core/coordinator.ts';
import { request } from '../support/http.ts';
import { waitFor } from '../support/wait.ts';

export const ADMIN = 'admin-secret';
export const APP = 'shop';

export function httpJson<T = any>(url: string, init: RequestInit = {}): Promise<{ status: number; body: T }> {
  return request<T>(url, init, 3000);
}

export class Cluster {
  redis!: RedisServer;
  readonly hubs = new Map<string, HubProcess>();
  readonly clients: HotKeyClient[] = [];
  #dir = '';
  #config = '';
  #traffic: NodeJS.Timeout | undefined;
  /** flags every hub of this cluster starts with, besides the cluster's own */
  #hubArgs: string[] = [];

  static async start(ids: string[], rules: object[], hubArgs: string[] = []): Promise<Cluster> {
    const cluster = new Cluster();
    cluster.#hubArgs = hubArgs;
    try {
      cluster.redis = await RedisServer.start();
      cluster.#dir = await mkdtemp(join(tmpdir(), 'hotkey-cluster-'));
      cluster.#config = join(cluster.#dir, 'config.json');
      await writeFile(cluster.#config, JSON.stringify({ apps: { [APP]: { rules } } }));
      await Promise.all(ids.map((id) => cluster.startMember(id)));
      await cluster.waitMembers(ids);
      return cluster;
    } catch (err) {
      console.error('# cluster setup failed:', err); // uvu does not print errors thrown in hooks
      await cluster.close(); // leave no hub or redis-server behind
      throw err;
    }
  }

  /** start() plus `clients` SDKs (seeded round-robin) connected to every hub; cleans up on failure. */
  static async setup(ids: string[], rules: object[], clients: number, hubArgs: string[] = []): Promise<Cluster> {
    const cluster = await Cluster.start(ids, rules, hubArgs);
    try {
      await cluster.addClients(clients, ids);
      for (const client of cluster.clients)
        await waitFor(`${client.instanceId} on all hubs`, () => client.hubs().length === ids.length, 10_000);
      return cluster;
    } catch (err) {
      console.error('# cluster setup failed:', err);
      await cluster.close();
      throw err;
    }
  }

  /**
   * Starts member `id` (a HubProcess on the cluster's redis and config); `port` brings a restarted
   * hub back at its old address, as a supervisor would.
   */
  async startMember(id: string, port = 0): Promise<HubProcess> {
    const args = [
      '--redis',
      this.redis.url,
      '--node-id',
      id,
      '--config',
      this.#config,
      '--admin-token',
      ADMIN,
      '--port',
      String(port),
      ...this.#hubArgs,
    ];
    // generous: on a loaded 2-core machine several tsx processes starting at once are slow
    const hub = await HubProcess.start({ args, readyTimeoutMs: 30_000 });
    this.hubs.set(id, hub);
    return hub;
  }

  hub(id: string): HubProcess {
    const hub = this.hubs.get(id);
    if (!hub) throw new Error(`no hub ${id}`);
    return hub;
  }

  /** Waits until every listed hub reports exactly `ids` as members. */
  async waitMembers(ids: string[], timeoutMs = 5000): Promise<void> {
    const want = [...ids].sort().join(',');
    for (const id of ids) {
      await waitFor(
        `${id} to list members ${want}`,
        async () => {
          const { body } = await httpJson(`${this.hub(id).httpUrl}/api/cluster`);
          return (
            (body.members as { id: string }[])
              .map((m) => m.id)
              .sort()
              .join(',') === want
          );
        },
        timeoutMs,
      );
    }
  }

  /** `count` SDK clients, client i seeded with only hub `seeds[i % seeds.length]`. */
  async addClients(count: number, seeds: string[], opts: Partial<ClientOptions> = {}): Promise<HotKeyClient[]> {
    const made: HotKeyClient[] = [];
    for (let i = 0; i < count; i++) {
      const client = new HotKeyClient({
        app: APP,
        hubs: this.hub(seeds[i % seeds.length]!).url,
        instanceId: `sdk-${this.clients.length}`,
        flushIntervalMs: 50,
        // the cluster tests judge the hubs' decisions by isHot(): a local surge (on by default)
        // would say yes before any hub decided
        surgeLocal: false,
        ...opts,
      });
      client.on('error', () => {});
      this.clients.push(client);
      made.push(client);
    }
    await Promise.all(made.map((c) => c.ready({ signal: AbortSignal.timeout(10_000) })));
    return made;
  }

  /** Every `tickMs`, each client tracks each key `perTick[key]` times (split evenly over clients). */
  traffic(perSecond: Record<string, number>, tickMs = 20): void {
    this.stopTraffic();
    let carry = new Map<string, number>();
    this.#traffic = setInterval(() => {
      const n = this.clients.length;
      if (n === 0) return;
      const next = new Map<string, number>();
      for (const [key, rate] of Object.entries(perSecond)) {
        const due = (rate * tickMs) / 1000 / n + (carry.get(key) ?? 0);
        const whole = Math.floor(due);
        next.set(key, due - whole);
        for (const client of this.clients) for (let i = 0; i < whole; i++) client.track(key);
      }
      carry = next;
    }, tickMs);
  }

  stopTraffic(): void {
    if (this.#traffic) clearInterval(this.#traffic);
    this.#traffic = undefined;
  }

  async history(viaHub: string, since = 0): Promise<HubEvent[]> {
    const { body } = await httpJson(`${this.hub(viaHub).httpUrl}/api/history?app=${APP}&since=${since}&limit=10000`);
    return body.events as HubEvent[];
  }

  static owner(ids: string[], key: string): string {
    return new Ownership(ids).owner(key)!;
  }

  /** Keys whose owner over `ids` is `id`, from a family `prefix0`, `prefix1`, ... */
  static keysOwnedBy(ids: string[], id: string, count: number, prefix: string): string[] {
    const out: string[] = [];
    for (let i = 0; out.length < count && i < 100_000; i++)
      if (Cluster.owner(ids, `${prefix}${i}`) === id) out.push(`${prefix}${i}`);
    return out;
  }

  async close(): Promise<void> {
    this.stopTraffic();
    await Promise.all(this.clients.splice(0).map((c) => c.close()));
    await Promise.all([...this.hubs.values()].map((h) => h.stop('SIGKILL', 3000).catch(() => undefined)));
    await this.redis?.stop().catch(() => undefined);
    if (this.#dir) await rm(this.#dir, { recursive: true, force: true });
  }
}
