/**
 * The core's own commands and Lua scripts, whatever the client: an adapter gives an `OwnSend`
 * that sends one command to the node holding a key, past its hook (not counted, not
 * invalidated, not routed again), and the core runs its scripts over it.
 *
 * A script is sent as EVALSHA of its SHA-1; a server that does not hold it yet (restarted,
 * flushed with SCRIPT FLUSH, or another Cluster master) replies NOSCRIPT, and the script is sent
 * once as EVAL, which also caches it there (the EVALSHA protocol of Redis's scripting docs).
 */
import { createHash } from 'node:crypto';

/**
 * Sends `argv` (the command name first) to the node holding `key`, past the adapter's hook;
 * resolves the reply as the client gives it (RESP2 shapes: numbers, strings or null, arrays).
 */
export type OwnSend = (key: string, argv: readonly (string | number)[]) => Promise<unknown>;

export class Script {
  readonly source: string;
  readonly sha: string;

  constructor(source: string) {
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** Runs the script on the node of `keys[0]`: EVALSHA, then EVAL when the server says NOSCRIPT. */
  async run(send: OwnSend, keys: readonly string[], args: readonly (string | number)[] = []): Promise<unknown> {
    const rest = [keys.length, ...keys, ...args];
    try {
      return await send(keys[0]!, ['EVALSHA', this.sha, ...rest]);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return send(keys[0]!, ['EVAL', this.source, ...rest]);
    }
  }
}

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}
