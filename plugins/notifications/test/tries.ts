/** What the notifications tests share: an endpoint's test message sent, and its first try awaited. */
import type { FastifyInstance } from 'fastify';
import { call } from '../../../test/helper.ts';

/** Sends the endpoint a test message and waits until its delivery has a try; that try. */
export async function testTry(a: FastifyInstance, endpointId: string): Promise<{ status: string | null; response: string; error: string | null }> {
  const { id } = (await call(a, `/api/admin/notifications/endpoints/${endpointId}/test`, { method: 'POST' })).json();
  const deadline = Date.now() + 15000;
  for (;;) {
    const [attempt] = (await call(a, `/api/admin/notifications/deliveries/${id}`)).json().attempts;
    if (attempt) return attempt;
    if (Date.now() > deadline) throw new Error(`delivery ${id} was not tried within 15 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
