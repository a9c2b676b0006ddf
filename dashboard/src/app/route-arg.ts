/**
 * Parts of the page's `#/view/…` address are percent-encoded app names and keys. An address is
 * untrusted text (a link anyone can craft), so a malformed escape (`%E0%A4%A`, `%zz`) must give a
 * view its error state, not throw a URIError half-way through rendering.
 */

/** The decoded part, or undefined when it is not valid percent-encoding. */
export function decodeRouteArg(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}
