/** Small HTTP helpers for the agents' APIs (all on 127.0.0.1). */

/** Status code of a GET (0 when nothing answers within `timeoutMs`). */
export async function httpCode(url: string, timeoutMs = 1000): Promise<number> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

export async function httpJson(url: string, timeoutMs = 1000): Promise<Record<string, unknown> | null> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await response.text();
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
}

export async function httpPost(
  url: string,
  body: unknown,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: response.status, text: (await response.text()).trim() };
  } catch (error) {
    return { status: 0, text: (error as Error).message };
  }
}

export async function httpPatch(
  url: string,
  body: unknown,
  timeoutMs = 5000,
): Promise<{ status: number; text: string }> {
  try {
    const response = await fetch(url, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: response.status, text: (await response.text()).trim() };
  } catch (error) {
    return { status: 0, text: (error as Error).message };
  }
}
