/**
 * What the ioredis adapter's public functions take, by shape: an ioredis `Redis` or `Cluster`, or
 * a client built on ioredis's Commander / `sendCommand` design (iovalkey's `Redis` and `Cluster`).
 * No client library's types are named here, so that the published declarations need neither
 * library installed and accept whichever one the service uses; the adapter checks the same shape
 * at run time and refuses anything else with a TypeError.
 */
export interface IoredisLike {
  /** every command passes through it: the method the adapter hooks */
  sendCommand(...args: never[]): unknown;
  /** a wrapped client's duplicate is wrapped the same way */
  duplicate(...args: never[]): unknown;
  readonly options: object;
  readonly status: string;
}
