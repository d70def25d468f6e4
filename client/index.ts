/**
 * A typed client for this API: paths, parameters, bodies and answers come from client/schema.d.ts,
 * generated from the OpenAPI document (`npm run client:generate`), over openapi-fetch.
 */
import createClient from 'openapi-fetch';
import type { paths } from './schema.d.ts';

export type { paths };

export function apiClient(baseUrl: string, apiKey: string) {
  return createClient<paths>({ baseUrl, headers: { 'X-Api-Key': apiKey } });
}
