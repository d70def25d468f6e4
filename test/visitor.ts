/** A visitor without a browser: keeps the storefront's cookies between calls and posts forms with the page's CSRF token. */
import type { FastifyInstance } from 'fastify';

export class Visitor {
  readonly cookies = new Map<string, string>();
  readonly #app: FastifyInstance;
  readonly #headers: Record<string, string>;

  constructor(app: FastifyInstance, headers: Record<string, string> = {}) {
    this.#app = app;
    this.#headers = headers;
  }

  #remember(setCookie: string | string[] | undefined): void {
    for (const c of [setCookie ?? []].flat()) {
      const [pair = ''] = c.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at);
      const value = pair.slice(at + 1);
      if (/max-age=0/i.test(c) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  #cookie(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(url: string) {
    const res = await this.#app.inject({ method: 'GET', url, headers: { ...this.#headers, cookie: this.#cookie() } });
    this.#remember(res.headers['set-cookie']);
    return res;
  }

  /** The CSRF token of the visitor's cookie (a page must have been opened first). */
  get csrf(): string {
    return this.cookies.get('storefront_csrf') ?? '';
  }

  async post(url: string, form: Record<string, string>, { csrf = true } = {}) {
    if (csrf && !this.csrf) await this.get('/');
    const res = await this.#app.inject({
      method: 'POST',
      url,
      headers: { ...this.#headers, cookie: this.#cookie(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ ...(csrf ? { _csrf: this.csrf } : {}), ...form }).toString(),
    });
    this.#remember(res.headers['set-cookie']);
    return res;
  }
}
