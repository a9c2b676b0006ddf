/**
 * The shared set-up of an end-to-end test file: one hub for the file, the SDK clients and raw
 * protocol peers its tests make, and one teardown that closes every one of them. `hubProcess`
 * runs the real `hotkey-hub` CLI (through HubProcess, the one process starter); `hubInProcess`
 * calls `startHub` (for tests that set tunables or read the hub's state). Both register `before`
 * and `after` on the uvu suite they are given.
 *
 *   const e2e = hubProcess(test, { config, sdk: { token: 's3cret' } });
 *   test('…', async () => {
 *     const group = await e2e.sdks(3);            // connected and welcomed, or it throws
 *     fetch(`${e2e.hub.httpUrl}/api/cluster`);
 *   });
 *
 * `startHubInProcess` (hub-in-process.ts) is the one in-process start, for a test that needs a hub
 * of its own beside the file's: `const h = await startHubInProcess({ tunables }); … await h.close()`.
 */
import type { Test } from 'uvu';
import { HotKeyClient, type ClientOptions } from '@hotkey/sdk';
import type { Hub, HubOptions } from '@hotkey/hub';
import { HubProcess, writeConfig, type HubProcessOptions } from './hub-process.ts';
import { startHubInProcess } from './hub-in-process.ts';
import { RawClient } from './raw-client.ts';
import { within } from './wait.ts';

export interface E2eOptions {
  /** options every `sdk()` client gets (before its own extras); `app` defaults to 'shop' */
  sdk?: Partial<ClientOptions>;
  /** close every raw peer after each test, not only at the end of the file @default false */
  closePeersAfterEach?: boolean;
}

/** What both kinds of hub offer a test. */
interface AnyHub {
  readonly url: string;
  readonly httpUrl: string;
}

export class E2e<H extends AnyHub> {
  readonly clients: HotKeyClient[] = [];
  readonly peers: RawClient[] = [];
  #hub: H | undefined;
  readonly #options: E2eOptions;
  readonly #start: (port?: number) => Promise<H>;
  readonly #stop: (hub: H) => Promise<unknown>;
  readonly #deferred: (() => unknown)[] = [];

  constructor(options: E2eOptions, start: (port?: number) => Promise<H>, stop: (hub: H) => Promise<unknown>) {
    this.#options = options;
    this.#start = start;
    this.#stop = stop;
  }

  /** The file's hub, started by the suite's `before`. */
  get hub(): H {
    if (!this.#hub) throw new Error('the hub is not started: use it inside a test');
    return this.#hub;
  }

  /** Starts the file's hub (the suite's `before` does), or a new one after the test stopped it. */
  async start(port?: number): Promise<H> {
    this.#hub = await this.#start(port);
    return this.#hub;
  }

  /**
   * Closes every client and peer made here, then stops the hub (the suite's `after` does). What
   * `defer` was given runs first, the last given first.
   */
  async close(): Promise<void> {
    try {
      for (const cleanup of this.#deferred.splice(0).reverse()) await cleanup();
    } finally {
      try {
        await this.closeClients();
      } finally {
        if (this.#hub) await this.#stop(this.#hub);
      }
    }
  }

  /** Runs `cleanup` at the start of `close()`, before the clients close (a traffic driver, a browser). */
  defer(cleanup: () => unknown): void {
    this.#deferred.push(cleanup);
  }

  /** A client of this file's hub (closed at the end of the file); not yet ready. */
  sdk(extra: Partial<ClientOptions> = {}): HotKeyClient {
    const hk = new HotKeyClient({
      app: 'shop',
      hubs: [this.hub.url],
      reconnectMaxMs: 300,
      ...this.#options.sdk,
      ...extra,
    });
    this.clients.push(hk);
    return hk;
  }

  /** `n` clients, each welcomed by the hub within `timeoutMs`; `extra(i)` adds per-client options. */
  async sdks(
    n: number,
    extra: (i: number) => Partial<ClientOptions> = () => ({}),
    timeoutMs = 5000,
  ): Promise<HotKeyClient[]> {
    const list = Array.from({ length: n }, (_, i) => this.sdk(extra(i)));
    await Promise.all(list.map((hk) => hk.ready({ signal: AbortSignal.timeout(timeoutMs) })));
    return list;
  }

  /** A raw protocol peer that completed Hello → Welcome + Snapshot (closed by the teardown). */
  async join(app: string, opts: Parameters<typeof RawClient.join>[2] = {}): ReturnType<typeof RawClient.join> {
    const joined = await RawClient.join(this.hub.url, app, opts);
    this.peers.push(joined.client);
    return joined;
  }

  /** A raw protocol peer that has only opened its socket (closed by the teardown). */
  async connect(): Promise<RawClient> {
    const peer = await RawClient.connect(this.hub.url);
    this.peers.push(peer);
    return peer;
  }

  closePeers(): void {
    for (const peer of this.peers.splice(0)) peer.close();
  }

  /** Closes every client and peer made here; the hub is stopped by the caller's `stop`. */
  async closeClients(timeoutMs = 10_000): Promise<void> {
    this.closePeers();
    await within('SDK clients to close', Promise.all(this.clients.splice(0).map((hk) => hk.close())), timeoutMs);
  }
}

function register<H extends AnyHub>(
  suite: Test,
  options: E2eOptions,
  start: (port?: number) => Promise<H>,
  stop: (hub: H) => Promise<unknown>,
): E2e<H> {
  const e2e = new E2e<H>(options, start, stop);
  suite.before(async () => {
    await e2e.start();
  });
  if (options.closePeersAfterEach) suite.after.each(() => e2e.closePeers());
  suite.after(() => e2e.close());
  return e2e;
}

/**
 * The real `hotkey-hub` CLI for the whole file (stopped with SIGTERM at the end). `config` is
 * written to a temporary file and passed as `--config`.
 */
export function hubProcess(
  suite: Test,
  options: E2eOptions & HubProcessOptions & { config?: object } = {},
): E2e<HubProcess> {
  const { config, args = [], sdk: _sdk, closePeersAfterEach: _each, ...rest } = options;
  const configArgs = config ? ['--config', writeConfig(config, 'hotkey-e2e-')] : [];
  return register(
    suite,
    options,
    (port) =>
      HubProcess.start({
        ...rest,
        args: [...configArgs, ...args, ...(port === undefined ? [] : ['--port', String(port)])],
      }),
    (hub) => hub.stop(),
  );
}

export { startHubInProcess };

/** A hub in this process (`startHubInProcess`) for the whole file. */
export function hubInProcess(suite: Test, hubOptions: HubOptions = {}, options: E2eOptions = {}): E2e<Hub> {
  return register(
    suite,
    options,
    (port) => startHubInProcess({ ...hubOptions, ...(port === undefined ? {} : { port }) }),
    (hub) => within('the hub to close', hub.close(), 10_000),
  );
}
