import { LocalNode } from '../../scripts/lib/local-cluster';

/** PATCH /config through `node` (a key set to null goes back to its default), expecting 200. */
export async function patchConfig(node: LocalNode, body: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${node.apiUrl}/config`, {
    method: 'PATCH',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  expect(response.status).toBe(200);
}
