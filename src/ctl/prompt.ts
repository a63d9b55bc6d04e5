import { createInterface, Interface } from 'node:readline';

/** Asks a person: the question is written as is (patronictl's `Primary [node1]: ` style), the answer is one line. */
export interface Prompter {
  /** The typed line, trimmed; null when the input has ended. */
  ask(question: string): Promise<string | null>;
  close(): void;
}

/**
 * Prompts on a terminal (or any stream of lines): answers are read line by line in order, so
 * typed-ahead or piped answers are kept for the next question.
 */
export function linePrompter(input: NodeJS.ReadableStream, output: NodeJS.WritableStream): Prompter {
  let reader: Interface | null = null;
  const lines: string[] = [];
  const waiting: Array<(line: string | null) => void> = [];
  let ended = false;
  const open = () => {
    if (reader) return;
    reader = createInterface({ input, terminal: false });
    reader.on('line', (line) => {
      const next = waiting.shift();
      if (next) next(line);
      else lines.push(line);
    });
    reader.on('close', () => {
      ended = true;
      for (const next of waiting.splice(0)) next(null);
    });
  };
  return {
    ask(question) {
      open();
      output.write(question);
      if (lines.length > 0) return Promise.resolve(lines.shift()!.trim());
      if (ended) return Promise.resolve(null);
      return new Promise((resolve) => waiting.push((line) => resolve(line === null ? null : line.trim())));
    },
    close() {
      reader?.close();
    },
  };
}

/** `[y/N]`: true only for y or yes. */
export function isYes(answer: string | null): boolean {
  return answer !== null && /^(y|yes)$/i.test(answer);
}
