/**
 * A command line split into words as POSIX shells (and Python's shlex, which Patroni uses for
 * callbacks) split it: blanks separate words, single quotes keep everything, double quotes keep
 * everything but `\"` and `\\`, a backslash outside quotes escapes the next character. Null when a
 * quote is not closed. One pass over the text.
 */
export function splitCommandLine(text: string): string[] | null {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quote === "'") {
      if (char === "'") quote = null;
      else word += char;
    } else if (quote === '"') {
      if (char === '"') quote = null;
      else if (char === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) word += text[++i];
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (char === '\\' && i + 1 < text.length) {
      word += text[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (quote) return null;
  if (inWord) words.push(word);
  return words;
}
