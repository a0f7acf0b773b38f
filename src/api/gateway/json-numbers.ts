/**
 * JSON numbers by the text the request wrote. Go's decoder (etcd's gateway) judges a number by its text: "1e3"
 * and "1.0" are no int64, 9007199254740993 is one exactly; JSON.parse keeps none of that. Numbers that are not
 * plain integers of at most 15 digits are turned into marked strings before parsing, and json-codec.ts reads
 * them back (numberText).
 *
 * A client's own string cannot pass for a mark: every client string that starts with U+0000 gets one more
 * U+0000 in front (clientString takes it off again), so after parsing a string starting with U+0000 and then
 * anything but U+0000 was made here. Before, the string "\u0000number:1e3" read as the number 1e3.
 *
 *   request text           parsed (\0 is U+0000)   read as
 *   1e3                    "\0number:1e3"          the number written 1e3
 *   "\u0000number:1e3"     "\0\0number:1e3"        the string "\0number:1e3"
 *   "\u0000\u0000x"        "\0\0\0x"               the string "\0\0x"
 */
/** Starts a string that stands for a JSON number written as the rest of it. */
export const numberMark = '\u0000number:';
/** A JSON string opening with U+0000 (the escape is the only way: JSON has no raw control characters). */
const nulEscape = '\\u0000';

/** A parsed client string as the client wrote it: without the U+0000 exactNumbers put in front of it. */
export function clientString(parsed: string): string {
  return parsed.startsWith('\u0000\u0000') ? parsed.slice(1) : parsed;
}

const jsonNumber = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
/** A number JSON.parse keeps exactly and Go would take as an integer: left as a number. */
const plainInteger = /^-?\d{1,15}$/;

/**
 * The JSON text with every number that is not a plain integer of at most 15 digits turned into a marked
 * string holding its text, and every string opening with U+0000 given one more. Numbers outside strings
 * only; anything that is not a JSON number is left for JSON.parse to refuse with its own message.
 */
export function exactNumbers(text: string): string {
  let out: string[] | undefined;
  let last = 0;
  let inString = false;
  let escape = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (escape) escape = false;
      else if (c === 0x5c) escape = true;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) {
      inString = true;
      if (text.startsWith(nulEscape, i + 1)) {
        (out ??= []).push(text.slice(last, i + 1), nulEscape);
        last = i + 1;
      }
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < text.length && /[0-9eE+\-.]/.test(text[j]!)) j++;
      const token = text.slice(i, j);
      if (!plainInteger.test(token) && jsonNumber.test(token)) {
        (out ??= []).push(text.slice(last, i), JSON.stringify(numberMark + token));
        last = j;
      }
      i = j - 1;
    }
  }
  return out === undefined ? text : out.join('') + text.slice(last);
}

