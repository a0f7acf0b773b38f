/**
 * JSON numbers by the text the request wrote. Go's decoder (etcd's gateway) judges a number by its text: "1e3"
 * and "1.0" are no int64, 9007199254740993 is one exactly; JSON.parse keeps none of that. Numbers that are not
 * plain integers of at most 15 digits are turned into marked strings before parsing, and json-codec.ts reads
 * them back (numberText).
 */
/** Starts a string that stands for a JSON number written as the rest of it. */
export const numberMark = '\u0000number:';

const jsonNumber = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
/** A number JSON.parse keeps exactly and Go would take as an integer: left as a number. */
const plainInteger = /^-?\d{1,15}$/;

/**
 * The JSON text with every number that is not a plain integer of at most 15 digits turned into a marked
 * string holding its text. Text outside strings only; anything that is not a JSON number is left for
 * JSON.parse to refuse with its own message.
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
    if (c === 0x22) inString = true;
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
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

