/**
 * The dashboard's static files, built into memory at start: they carry no data, so they are
 * served without a token, under a Content-Security-Policy that lets the page talk to this hub only.
 */
import type { ServerResponse } from 'node:http';

/** The dashboard's files by path ('/', '/assets/…'); undefined for a path that is not one. */
export type AssetLookup = (path: string) => { body: Uint8Array; type: string } | undefined;

/**
 * What the dashboard's static files may do in the browser: talk to this hub only. The page's live
 * feed is a WebSocket to its own host, named explicitly beside 'self' (browsers before CSP 3 do not
 * let 'self' cover ws: and wss:). A Host header that is not a plain host[:port] gets 'self' alone.
 */
export function contentSecurityPolicy(host: string | undefined): string {
  const sockets =
    host !== undefined && /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/.test(host)
      ? ` ws://${host} wss://${host}`
      : '';
  return `default-src 'self'; connect-src 'self'${sockets}; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'`;
}

/** Answers a GET or HEAD of one of the dashboard's files; false (nothing sent) for anything else. */
export function serveAsset(
  asset: AssetLookup | undefined,
  res: ServerResponse,
  method: string,
  path: string,
  host: string | undefined,
): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  const found = asset?.(path === '/index.html' ? '/' : path);
  if (found === undefined) return false;
  res.writeHead(200, {
    'content-type': found.type,
    'content-length': found.body.byteLength,
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
    'content-security-policy': contentSecurityPolicy(host),
  });
  res.end(method === 'HEAD' ? undefined : found.body);
  return true;
}
