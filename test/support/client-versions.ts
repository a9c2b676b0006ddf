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
 *   registry. `pnpm test` gets exact versions, and the registry as of `REGISTRY_DATE` for what
 *   they pull in; `pnpm test:latest` sets HOTKEY_TEST_VERSIONS=latest and gets the newest
 *   published clients, ws and TypeScript instead.
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

/** What one run of the packed-consumer test installs from the registry, and how. */
export interface ConsumerVersions {
  /** 'pinned' (`pnpm test`) or 'latest' (`pnpm test:latest`) */
  readonly mode: 'pinned' | 'latest';
  /** the version spec of each package a consumer installs by name */
  readonly install: Readonly<Record<InstalledByName, string>>;
  /**
   * npm settings of every install (each consumer project's .npmrc, and flags of the global one).
   * Pinned: `before`, so that what the exact versions and our packages pull in by range resolves
   * to the registry as it was on that date, transitively (npm's `--before`); the npm cache serves
   * what it holds. Latest: the registry as it is now, each document revalidated.
   */
  readonly npm: Readonly<Record<string, string>>;
  /** the versions the install must have resolved to (the date above gives ws), checked after it; none for latest */
  readonly expect: Readonly<Partial<Record<Reported, string>>>;
}

/** installed by name in a consumer project */
export type InstalledByName = PeerName | 'typescript' | '@types/node';
/** the packages whose resolved version a consumer run reports */
export type Reported = PeerName | 'typescript' | 'ws';

/**
 * The registry date of pinned installs: after every exact pin's release. Raise it together with
 * the pins; a release after it is invisible to `pnpm test`.
 */
export const REGISTRY_DATE = '2026-12-01T00:00:00.000Z';

/** `@types/node` follows the Node major the tests run on, in both modes. */
const TYPES_NODE = '20.19.43';

const PINNED_INSTALL = {
  ioredis: PEER_ENDS.ioredis.newest,
  redis: PEER_ENDS.redis.newest,
  iovalkey: PEER_ENDS.iovalkey.newest,
  typescript: '5.9.3',
  '@types/node': TYPES_NODE,
};

const PINNED: ConsumerVersions = {
  mode: 'pinned',
  install: PINNED_INSTALL,
  npm: { before: REGISTRY_DATE, 'prefer-offline': 'true' },
  expect: {
    ioredis: PINNED_INSTALL.ioredis,
    redis: PINNED_INSTALL.redis,
    iovalkey: PINNED_INSTALL.iovalkey,
    typescript: PINNED_INSTALL.typescript,
    ws: '8.23.1',
  },
};

const LATEST: ConsumerVersions = {
  mode: 'latest',
  install: { ioredis: 'latest', redis: 'latest', iovalkey: 'latest', typescript: 'latest', '@types/node': TYPES_NODE },
  npm: { 'prefer-online': 'true' },
  expect: {},
};

/** The set named by HOTKEY_TEST_VERSIONS: `latest`, or the pinned one when unset; anything else throws. */
export function consumerVersions(env: NodeJS.ProcessEnv = process.env): ConsumerVersions {
  const mode = env.HOTKEY_TEST_VERSIONS ?? 'pinned';
  if (mode === 'pinned') return PINNED;
  if (mode === 'latest') return LATEST;
  throw new TypeError(`HOTKEY_TEST_VERSIONS must be 'pinned' or 'latest', got '${mode}'`);
}
