/**
 * The node-redis package a test runs against: v6 (`redis`, the default) or v5 (`redis5`, the
 * test package's alias of redis@5). A test file imports its node-redis functions from here; a
 * `*-v5.test.ts` file calls `useNodeRedis(5)` and then imports that test file, so one set of cases
 * runs on both versions. The exports are live bindings, swapped by `useNodeRedis`; the types are
 * v6's (the adapter's own types over both versions are checked in test/types/node-redis-versions.ts).
 */
import * as v6 from 'redis';
import * as v5 from 'redis5';

type Lib = typeof v6;
const LIBS: Record<5 | 6, Lib> = { 6: v6, 5: v5 as unknown as Lib };

export let createClient: Lib['createClient'] = v6.createClient;
export let createClientPool: Lib['createClientPool'] = v6.createClientPool;
export let createCluster: Lib['createCluster'] = v6.createCluster;
export let WatchError: Lib['WatchError'] = v6.WatchError;
export let RESP_TYPES: Lib['RESP_TYPES'] = v6.RESP_TYPES;
/** the major version the exports are of */
export let nodeRedisVersion: 5 | 6 = 6;

/** Makes every export of this module v5's or v6's; call it before importing the test file. */
export function useNodeRedis(version: 5 | 6): void {
  const lib = LIBS[version];
  ({ createClient, createClientPool, createCluster, WatchError, RESP_TYPES } = lib);
  nodeRedisVersion = version;
}
