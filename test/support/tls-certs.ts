/**
 * A throwaway PKI for TLS tests, made with the `openssl` CLI in a temp dir: a CA, a server
 * certificate it signed for `localhost` and `127.0.0.1`, a client certificate, and an unrelated key
 * (for "the key does not match the certificate"). `spki` is the server key's SHA-256 SPKI hash in
 * base64, what Chromium's `--ignore-certificate-errors-spki-list` takes.
 */
import { execFileSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  dir: string;
  /** file paths */
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** a key that belongs to no certificate here */
  otherKey: string;
  /** the CA certificate, PEM */
  ca: string;
  spki: string;
  remove(): void;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 20_000 });
}

function signed(dir: string, name: string, cn: string, ext: string): void {
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, ['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  ]);
}

export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'hotkey-pki-'));
  openssl(dir, [
    'req',
    '-x509',
    ...EC,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=hotkey-test-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  signed(
    dir,
    'server',
    'localhost',
    'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n',
  );
  signed(
    dir,
    'client',
    'hotkey-test-client',
    'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n',
  );
  openssl(dir, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'other.key']);
  const serverCert = join(dir, 'server.pem');
  const der = new X509Certificate(readFileSync(serverCert)).publicKey.export({ type: 'spki', format: 'der' });
  return {
    dir,
    caCert: join(dir, 'ca.pem'),
    serverCert,
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
    otherKey: join(dir, 'other.key'),
    ca: readFileSync(join(dir, 'ca.pem'), 'utf8'),
    spki: createHash('sha256').update(der).digest('base64'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
