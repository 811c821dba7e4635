/** The most of a User-Agent that is kept, in Unicode code points (an emoji is one). */
export const MAX_USER_AGENT_LENGTH = 255;

/** Printable ASCII only, and short enough: the User-Agent of nearly every client, kept as it is. */
const PLAIN = /^[\x20-\x7e]*$/;
/** Bytes above ASCII (Node hands header values over as Latin-1: one character per byte). */
const NON_ASCII = /[\x80-\xff]/;
/** Control characters (Unicode category Cc: C0, DEL and C1), which a stored value never holds. */
// eslint-disable-next-line no-control-regex -- finding control characters is this expression's purpose
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/gu;

/**
 * A User-Agent as `last_used_user_agent` keeps it (docs/api.md#usage-fields): UTF-8, no control characters, cut to
 * whole code points. On every exchange: a short ASCII value (nearly all) costs one regular-expression test.
 */
export function usageUserAgent(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string' || header === '') return null;
  if (header.length <= MAX_USER_AGENT_LENGTH && PLAIN.test(header)) return header;
  const text = NON_ASCII.test(header) ? Buffer.from(header, 'latin1').toString('utf8') : header;
  const cleaned = text.replace(CONTROL, '');
  if (cleaned === '') return null;
  return cleaned.length <= MAX_USER_AGENT_LENGTH ? cleaned : firstCodePoints(cleaned, MAX_USER_AGENT_LENGTH);
}

/** The first `count` code points of `text`. */
function firstCodePoints(text: string, count: number): string {
  let end = 0;
  for (let kept = 0; kept < count && end < text.length; kept += 1) {
    end += (text.codePointAt(end) ?? 0) > 0xffff ? 2 : 1;
  }
  return text.slice(0, end);
}
