/**
 * `ready()`: one promise settled once, by the first hub that welcomes this instance (resolve) or
 * by what makes waiting pointless (a refusal, a TLS trust problem, close: reject). Later
 * outcomes change nothing; a caller's AbortSignal ends only that caller's wait.
 */
export class Readiness {
  readonly #promise: Promise<void>;
  #resolve!: () => void;
  #reject!: (err: Error) => void;
  #settled = false;

  constructor() {
    this.#promise = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#promise.catch(() => {}); // nobody may ever call ready(): not an unhandled rejection
  }

  get settled(): boolean {
    return this.#settled;
  }

  resolve(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve();
  }

  reject(err: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(err);
  }

  /** The promise, or one that also rejects with `signal`'s reason when it aborts first. */
  wait(signal: AbortSignal | undefined): Promise<void> {
    if (signal === undefined) return this.#promise;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#promise.then(
        () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        (err) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      );
    });
  }
}
