/**
 * Folders import one way: `pnpm lint` runs dependency-cruiser with this file and fails on any
 * import that points up the layer order below, or sideways between two folders of one layer (so
 * no two folders can ever import each other). A folder's subfolders belong to it
 * (`hub/src/core/decide/detectors` is core).
 *
 * hub/src, lowest first:
 *   core      the hub's logic, pure of sockets and processes; owns the interfaces it needs
 *             (Coordinator, Logger) and gets their implementations injected
 *   cluster   Coordinator implementations: alone, or over Redis
 *   http      the HTTP API, /metrics and the dashboard feed, over core and cluster
 *   notify    webhook notifications of core events (same layer as http: neither imports the other)
 *   server    sockets, processes and startHub: wires everything together
 *   demo      a demo load over a started hub
 *   conformance   the protocol conformance kit (same layer as demo: it imports only the SDK's protocol)
 *   cli.ts, then index.ts   the entry points, on top
 *
 * sdk/src, lowest first:
 *   root modules (errors, limits, rules, options, hash, glob, ownership)   the shared floor
 *   wire / counting / cache   one layer: none imports another
 *   client    HotKeyClient over them
 *   redis     the client-agnostic Redis core over the client: command table, key identity, the
 *             hot read path, write invalidation, tracking; it imports no Redis client library
 *   ioredis / node-redis   one adapter per client library, over the core (neither imports the other)
 *   ioredis.ts / node-redis.ts, then index.ts and internal.ts   the package entry points, on top
 *             (index.ts what a service calls, internal.ts the building blocks; neither imports the other)
 *
 * hub/src/core, lowest first (its step folders: docs/internals/layout.md):
 *   the ground   root modules every step may use: coordinator, logger, peer, token-bucket, tunables;
 *             they import nothing else of the core
 *   decide    which keys are hot: rules compiled, detectors, schedules, rate splits, replica steps
 *   aggregate the per-app window slab and the aggregator that counts into it and asks decide
 *   membership   the member list, the window handoff between hubs, auth, version-1 sessions
 *   observe   what the core counts and shows: metrics, status, app rows, QPS history, key privacy
 *   broadcast the frames, the broadcaster, announcements, value push
 *   ingest / invalidate   a session and its Reports; invalidations, holders, fences (neither
 *             imports the other)
 *   the façade   the other root modules (apps, hub-tick, hub-members, hub-core), on top
 * Inside the core the rule is on code: a step may name a higher step's type (the per-app state,
 * the session, the counters it bumps) with `import type`, which compiles to nothing, but never
 * call into it; no-circular still forbids any loop, types included. A step's tests may drive it
 * through the steps above it, as the hub does (decide's tests feed an aggregator, a session's
 * run a hub core).
 *
 * sdk/src/client, lowest first (the same rule on code, type-only imports aside; no ground):
 *   report / invalidate   the Report frames, the app config and rate limits the hubs send; the
 *             invalidation API, its pending Acks, holds, leases, resync (neither imports the other)
 *   read      get() past a hit: loads, local values, value push, recent reads, local surges
 *   observe   stats(), status(), the status log, the Prometheus text and its sources
 *   the façade   every root module (client, parts, dispatch, hub-events, links, events,
 *             readiness, adapter-view), on top: it wires the groups; a group imports no root code
 *
 * sdk/src/redis, lowest first (the same rule on code):
 *   the ground   command (the one command shape), command-table, key-specs, identity, hash-slots
 *   breaker / tracking   the circuit breaker per node; client-side caching sessions per node
 *   read / write   a hot key's reads through the cache (held reads, replies, shared records,
 *             replicas); a write's invalidation, hot-key counters, coalescing (neither calls the other)
 *   the façade   wrap-options, wrap-events: what one wrapped client sets up, on top
 *
 * Tests beside their source follow the same order, with two exceptions where they must: core's
 * tests may use cluster's coordinators (the real parts the core is given), an adapter's tests
 * may use its entry point, and the Redis core's tests may drive it through an adapter's entry
 * point (the core runs only under an adapter).
 */

const re = (file) => file.replace(/\./g, '\\.');
const isFile = (name) => name.endsWith('.ts');

/**
 * Rules that forbid each layer to import any later one, or a peer of its own layer. `layers` is
 * lowest first; a layer is folder names, or root module names (`index.ts`); '(root)' stands for
 * every other root module. `testExempt`: the later folders a layer's tests may still import.
 */
function layerRules(pkg, layers, testExempt = {}) {
  const named = layers.flat().filter(isFile);
  const rootOthers = `^${pkg}/[^/]+\\.ts$`;
  const pathOf = (f) => (f === '(root)' ? `[^/]+\\.ts$` : isFile(f) ? `${re(f)}$` : `${f}/`);
  const rules = [];
  layers.forEach((layer, i) => {
    const higher = layers.slice(i + 1).flat();
    for (const folder of layer) {
      const forbidden = [...layer.filter((f) => f !== folder), ...higher];
      if (forbidden.length === 0) continue;
      const from =
        folder === '(root)'
          ? { path: rootOthers, ...(named.length > 0 ? { pathNot: `^${pkg}/(${named.map(re).join('|')})$` } : {}) }
          : { path: `^${pkg}/${pathOf(folder)}` };
      const to = (list) => ({ path: `^${pkg}/(${list.map(pathOf).join('|')})` });
      const rule = (name, fromPart, list) => ({
        name: `${pkg}: ${folder} imports up or sideways${name}`,
        comment: `${pkg}/${folder} may import only what is below it in the layer order (see .dependency-cruiser.cjs)`,
        severity: 'error',
        from: fromPart,
        to: to(list),
      });
      const exempt = testExempt[folder] ?? [];
      if (exempt.length === 0) {
        rules.push(rule('', from, forbidden));
        continue;
      }
      rules.push(rule('', { ...from, pathNot: TEST }, forbidden));
      const forTests = forbidden.filter((f) => !exempt.includes(f));
      if (forTests.length > 0)
        rules.push(rule(' (test)', { path: `${from.path.replace(/\$$/, '')}.*${TEST}` }, forTests));
    }
  });
  return rules;
}

const TEST = '\\.test\\.ts$';

/**
 * A folder's steps import one way (the core's, the SDK client's: see the head of this file):
 * `ground` root modules (may be none) import nothing else of the folder; each step in `steps`
 * (lowest first, peers in one array) imports code only from the ground and the steps below it;
 * the other root modules are the façade on top. Tests are exempt (see the head of this file).
 */
function coreStepRules(core, ground, steps) {
  const groundPath = ground.length > 0 ? `^${core}/(${ground.map(re).join('|')})$` : undefined;
  const rules = [];
  if (groundPath !== undefined)
    rules.push({
      name: `${core}: the ground imports only the ground`,
      comment: `${ground.join(', ')} sit under every step of ${core}: they import nothing else of it`,
      severity: 'error',
      from: { path: groundPath },
      to: { path: `^${core}/`, pathNot: groundPath },
    });
  steps.forEach((layer, i) => {
    const higher = steps.slice(i + 1).flat();
    for (const step of layer) {
      const above = [...layer.filter((s) => s !== step), ...higher];
      const folders = above.length > 0 ? `(${above.join('|')})/|` : '';
      rules.push({
        name: `${core}: ${step} calls up or sideways`,
        comment: `${core}/${step} may import code only from the ground and the steps below it (type-only imports aside; see .dependency-cruiser.cjs)`,
        severity: 'error',
        from: { path: `^${core}/${step}/`, pathNot: TEST },
        to: {
          path: `^${core}/(${folders}[^/]+\\.ts$)`,
          ...(groundPath !== undefined ? { pathNot: groundPath } : {}),
          dependencyTypesNot: ['type-only'],
        },
      });
    }
  });
  return rules;
}

module.exports = {
  forbidden: [
    // core's tests run the core against the real coordinators, which live in cluster
    ...layerRules(
      'hub/src',
      [['core'], ['cluster'], ['http', 'notify'], ['server'], ['demo', 'conformance'], ['cli.ts'], ['index.ts']],
      {
        core: ['cluster'],
      },
    ),
    ...coreStepRules(
      'hub/src/core',
      ['coordinator.ts', 'logger.ts', 'peer.ts', 'token-bucket.ts', 'tunables.ts'],
      [['decide'], ['aggregate'], ['membership'], ['observe'], ['broadcast'], ['ingest', 'invalidate']],
    ),
    // the SDK client's groups: no ground, every root module of client/ is the façade over them
    ...coreStepRules('sdk/src/client', [], [['report', 'invalidate'], ['read'], ['observe']]),
    // the SDK's Redis core: its ground is the command shape, the command table and key identity
    ...coreStepRules(
      'sdk/src/redis',
      ['command.ts', 'command-table.ts', 'key-specs.ts', 'identity.ts', 'hash-slots.ts'],
      [
        ['breaker', 'tracking'],
        ['read', 'write'],
      ],
    ),
    // an adapter's tests drive it through its entry point, as a user does; the core's through an adapter's
    ...layerRules(
      'sdk/src',
      [
        ['(root)'],
        ['wire', 'counting', 'cache'],
        ['client'],
        ['redis'],
        ['ioredis', 'node-redis'],
        ['ioredis.ts', 'node-redis.ts'],
        ['index.ts', 'internal.ts'],
      ],
      {
        redis: ['ioredis', 'node-redis', 'ioredis.ts', 'node-redis.ts'],
        ioredis: ['ioredis.ts'],
        'node-redis': ['node-redis.ts'],
      },
    ),
    {
      name: 'sdk: the metrics text loads only through its entry',
      comment:
        'client/observe/metrics.ts (Prometheus text) is loaded only by a service that imports @hotkey/sdk/metrics, so every other service keeps its code off the heap; integrations register with client/observe/metrics-sources.ts',
      severity: 'error',
      from: { path: '^sdk/src/', pathNot: '^sdk/src/client/observe/metrics\\.test\\.ts$' },
      to: { path: '^sdk/src/client/observe/metrics\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-circular',
      comment: 'modules that import each other, directly or round a loop',
      severity: 'error',
      from: { path: '^(hub|sdk)/src/' },
      to: { circular: true },
    },
  ],
  options: {
    includeOnly: '^(hub|sdk)/src/',
    exclude: { path: '/dist/' },
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['@hotkey/source', 'import', 'types', 'default'],
      extensions: ['.ts', '.js'],
    },
  },
};
