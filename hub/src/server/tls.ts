/**
 * The hub's certificate: read from files (CLI flags, the config file's `tls`), checked before the
 * server starts so that a wrong file stops start-up with the field named rather than failing
 * every handshake later.
 */
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import { ErrorCode, ValidationError } from '@hotkey/sdk';
import type { HubTlsOptions } from './options.ts';

/** Paths of a PEM certificate (chain) and its key, and what to call each in an error. */
export interface TlsFiles {
  cert: string;
  key: string;
}

function fail(field: string, message: string): never {
  throw new ValidationError(ErrorCode.Config, field, message);
}

/**
 * Reads both files. `names` says what to call them in errors (`--tls-cert` for a flag,
 * `tls.cert` for the config file) @default { cert: 'tls.cert', key: 'tls.key' }
 */
export async function loadTls(
  files: TlsFiles,
  names: TlsFiles = { cert: 'tls.cert', key: 'tls.key' },
): Promise<HubTlsOptions> {
  const read = async (path: string, field: string) => {
    try {
      return await readFile(path);
    } catch (err) {
      fail(field, `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const [cert, key] = [await read(files.cert, names.cert), await read(files.key, names.key)];
  checkTls({ cert, key }, names);
  return { cert, key };
}

/** Throws ValidationError (HK_ERR_CONFIG) naming the field unless node:tls accepts the pair and the key is the certificate's. */
export function checkTls(tls: HubTlsOptions, names: TlsFiles = { cert: 'tls.cert', key: 'tls.key' }): void {
  if (typeof tls !== 'object' || tls === null || tls.cert === undefined || tls.key === undefined)
    throw new TypeError('options.tls must be { cert, key } (PEM)');
  try {
    createSecureContext({ cert: tls.cert });
  } catch (err) {
    fail(names.cert, `not a PEM certificate: ${(err as Error).message}`);
  }
  try {
    createSecureContext({ key: tls.key });
  } catch (err) {
    fail(names.key, `not a PEM private key: ${(err as Error).message}`);
  }
  try {
    createSecureContext({ cert: tls.cert, key: tls.key });
  } catch (err) {
    fail(names.key, `does not match the certificate in ${names.cert} (${(err as Error).message})`);
  }
}
