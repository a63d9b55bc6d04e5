/** The message of anything thrown, for a log line or a verdict; with its cause's when it has one (a socket error under a fetch failure). */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
  }
  return String(error);
}
