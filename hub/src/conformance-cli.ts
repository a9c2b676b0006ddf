/**
 * `hotkey-hub conformance`: checks a hub or a client against the wire protocol's numbered rules
 * (sdk/src/wire/PROTOCOL.md, "Conformance kit") and prints which hold and which are broken.
 * bin/hotkey-hub.js dispatches to it (one bin per package keeps `npx @hotkey/hub` working).
 * Exit codes: 0 every checked rule holds, 1 a rule is broken (or the peer never came), 2 bad usage.
 */
import { parseArgs } from 'node:util';
import { checkHub, startClientCheck, type Results } from './conformance/index.ts';

const USAGE = `usage: hotkey-hub conformance hub <ws-url> [options]
       hotkey-hub conformance client [options]

  hub <ws-url>       play clients against the hub at ws-url (ws:// or wss://): rules H1-H13
    --app NAME       the app to join (default conformance; any name on a hub without a config file)
    --token T        the app's token; also checks that a wrong token is refused
  client             play a hub; the client under test connects to the printed URL: rules C1-C8
    --host ADDR      interface to listen on (default 127.0.0.1)
    --port N         port, 0 = any free one (default 0)
    --lease-ms N     lease the kit grants (default 2000)
    --wait-ms N      how long to wait for the client to connect (default 30000)
  --timeout-ms N     how long one step may take (default 3000)
  --json             print the results as one JSON object
  --help             show this help

Exit codes: 0 every checked rule holds, 1 a rule is broken, 2 bad usage.
`;

function usageError(message: string): never {
  process.stderr.write(`hotkey-hub conformance: ${message}\n\n${USAGE}`);
  process.exit(2);
}

function parse() {
  try {
    return parseArgs({
      strict: true,
      allowPositionals: true,
      options: {
        app: { type: 'string' },
        token: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        'lease-ms': { type: 'string' },
        'wait-ms': { type: 'string' },
        'timeout-ms': { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    });
  } catch (err) {
    usageError((err as Error).message);
  }
}

function integer(flag: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max)
    usageError(`--${flag} must be an integer in [${min}, ${max}], got "${value}"`);
  return n;
}

async function main(): Promise<void> {
  const { values, positionals } = parse();
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const [mode, url, ...rest] = positionals;
  if (rest.length > 0) usageError(`unexpected argument "${rest[0]}"`);
  const timeoutMs = integer('timeout-ms', values['timeout-ms'], 1, 600_000);
  let results: Results;
  let title: string;
  if (mode === 'hub') {
    if (url === undefined || !/^wss?:\/\/\S+$/.test(url)) usageError('hub needs a ws:// or wss:// URL');
    for (const flag of ['host', 'port', 'lease-ms', 'wait-ms'] as const)
      if (values[flag] !== undefined) usageError(`--${flag} is for client mode`);
    if (values.app !== undefined && values.app === '') usageError('--app must not be empty');
    title = `hotkey-hub conformance hub ${url}`;
    results = await checkHub(url, {
      ...(values.app === undefined ? {} : { app: values.app }),
      ...(values.token === undefined ? {} : { token: values.token }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  } else if (mode === 'client') {
    if (url !== undefined) usageError(`client takes no URL (got "${url}")`);
    for (const flag of ['app', 'token'] as const)
      if (values[flag] !== undefined) usageError(`--${flag} is for hub mode`);
    const port = integer('port', values.port, 0, 65_535);
    const leaseMs = integer('lease-ms', values['lease-ms'], 100, 3_600_000);
    const waitMs = integer('wait-ms', values['wait-ms'], 1, 3_600_000);
    const check = await startClientCheck({
      ...(values.host === undefined ? {} : { host: values.host }),
      ...(port === undefined ? {} : { port }),
      ...(leaseMs === undefined ? {} : { leaseMs }),
      ...(waitMs === undefined ? {} : { waitMs }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
    process.stdout.write(`HOTKEY_CONFORMANCE_LISTENING ${check.url}\n`);
    title = `hotkey-hub conformance client (${check.url})`;
    results = await check.done;
  } else {
    usageError(mode === undefined ? 'say hub or client' : `unknown mode "${mode}"`);
  }
  process.stdout.write(
    values.json
      ? `${JSON.stringify({ title, broken: results.broken, rules: results.list() })}\n`
      : results.format(title),
  );
  process.exitCode = results.broken ? 1 : 0;
}

main().catch((err: unknown) => {
  process.stderr.write(`hotkey-hub conformance: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
