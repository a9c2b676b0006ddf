/**
 * Every third-party version a test installs, in one place, so that a release published tomorrow
 * cannot turn the suite red without a commit here.
 *
 * - `PEER_ENDS`: for each client library the SDK supports (sdk/package.json `peerDependencies`),
 *   the lowest supported release and the pinned newest one. The test package installs each as an
 *   alias, `<name>-lowest` and `<name>-newest` (test/package.json), and
 *   test/e2e/peer-versions.test.ts runs the adapters on both ends and checks that the aliases and
 *   the peer ranges agree with this table.
 * - `consumerVersions()`: what the packed-consumer test (test/package) installs from the public
 *   registry. `pnpm test` gets exact versions; `pnpm test:latest` sets HOTKEY_TEST_VERSIONS=latest
 *   and gets the newest published clients, ws and TypeScript instead.
 */

/** A client library the SDK supports: its peer range's two ends, as tested. */
export interface PeerEnds {
  /** the lowest release the peer range admits and the suite runs */
  lowest: string;
  /** the newest release the suite runs (pinned: raised by hand after `pnpm test:latest` passed) */
  newest: string;
  /** the adapter entry that takes its clients */
  entry: '@hotkey/sdk/ioredis' | '@hotkey/sdk/node-redis';
}

export const PEER_ENDS = {
  ioredis: { lowest: '5.3.0', newest: '6.1.0', entry: '@hotkey/sdk/ioredis' },
  redis: { lowest: '5.0.0', newest: '6.4.0', entry: '@hotkey/sdk/node-redis' },
  iovalkey: { lowest: '0.1.0', newest: '0.4.0', entry: '@hotkey/sdk/ioredis' },
} as const satisfies Record<string, PeerEnds>;

export type PeerName = keyof typeof PEER_ENDS;

/** What one run of the packed-consumer test installs from the registry. */
export interface ConsumerVersions {
  /** 'pinned' (`pnpm test`) or 'latest' (`pnpm test:latest`) */
  readonly mode: 'pinned' | 'latest';
  /** the version spec of each package a consumer installs by name */
  readonly install: Readonly<Record<PeerName | 'typescript' | '@types/node', string>>;
  /**
   * npm `overrides` of the consumer projects: exact versions of the packed packages' own runtime
   * dependencies (and what they pull in by name), so that nothing resolves by range. Empty for
   * `latest`: those resolve as a new user's install does, to the newest release in range.
   */
  readonly overrides: Readonly<Record<string, string>>;
}

/** the runtime dependencies of @hotkey/sdk and @hotkey/hub, pinned for `pnpm test` */
const RUNTIME_PINS = {
  mnemonist: '0.40.8',
  msgpackr: '2.1.4',
  pino: '10.4.0',
  'prom-client': '15.1.3',
  ws: '8.23.1',
};

/** `@types/node` follows the Node major the tests run on, in both modes. */
const TYPES_NODE = '20.19.43';

const PINNED: ConsumerVersions = {
  mode: 'pinned',
  install: {
    ioredis: PEER_ENDS.ioredis.newest,
    redis: PEER_ENDS.redis.newest,
    iovalkey: PEER_ENDS.iovalkey.newest,
    typescript: '5.9.3',
    '@types/node': TYPES_NODE,
  },
  overrides: RUNTIME_PINS,
};

const LATEST: ConsumerVersions = {
  mode: 'latest',
  install: { ioredis: 'latest', redis: 'latest', iovalkey: 'latest', typescript: 'latest', '@types/node': TYPES_NODE },
  overrides: {},
};

/** The set named by HOTKEY_TEST_VERSIONS: `latest`, or the pinned one when unset; anything else throws. */
export function consumerVersions(env: NodeJS.ProcessEnv = process.env): ConsumerVersions {
  const mode = env.HOTKEY_TEST_VERSIONS ?? 'pinned';
  if (mode === 'pinned') return PINNED;
  if (mode === 'latest') return LATEST;
  throw new TypeError(`HOTKEY_TEST_VERSIONS must be 'pinned' or 'latest', got '${mode}'`);
}
