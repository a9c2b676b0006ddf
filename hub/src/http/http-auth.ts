/**
 * Who may call a route: reads need the dashboard token only when one is set (the admin token
 * also reads); writes need the admin token and are refused outright when the hub has none.
 * Tokens are compared in constant time (core/membership/auth.ts).
 */
import type { IncomingMessage } from 'node:http';
import { ErrorCode } from '@hotkey/sdk';
import { bearerToken, tokenMatches } from '../core/membership/auth.ts';
import { HttpError, type Auth } from './http-request.ts';

/** The hub's tokens as of this request (a config reload may change them). */
export interface HttpTokens {
  adminToken: string | undefined;
  dashboardToken: string | undefined;
}

/** Throws a 401 (no token) or 403 (wrong token, or writes disabled) HttpError unless `req` may pass `auth`. */
export function authorize(auth: Auth, req: IncomingMessage, tokens: Readonly<HttpTokens>): void {
  if (auth === 'read') authorizeRead(req, tokens);
  else if (auth === 'write') authorizeWrite(req, tokens);
}

function authorizeRead(req: IncomingMessage, { adminToken, dashboardToken }: HttpTokens): void {
  if (dashboardToken === undefined) return;
  const presented = bearerToken(req.headers.authorization);
  if (presented === undefined)
    throw new HttpError(401, ErrorCode.Auth, 'this hub requires the dashboard token: Authorization: Bearer <token>');
  const ok =
    tokenMatches(presented, dashboardToken) || (adminToken !== undefined && tokenMatches(presented, adminToken));
  if (!ok) throw new HttpError(403, ErrorCode.Auth, 'wrong token');
}

function authorizeWrite(req: IncomingMessage, { adminToken }: HttpTokens): void {
  if (adminToken === undefined) {
    throw new HttpError(
      403,
      ErrorCode.Auth,
      'writes are disabled: start the hub with --admin-token (or HOTKEY_ADMIN_TOKEN, or "adminToken" in the config file)',
    );
  }
  const presented = bearerToken(req.headers.authorization);
  if (presented === undefined)
    throw new HttpError(401, ErrorCode.Auth, 'this request requires the admin token: Authorization: Bearer <token>');
  if (!tokenMatches(presented, adminToken)) throw new HttpError(403, ErrorCode.Auth, 'wrong admin token');
}
