/**
 * Malformed requests for one documented operation. Each starts from a request that names seeded
 * data and carries a body the schema accepts, then breaks one thing: the key, the method, one path
 * or query parameter, one body field, the size, the encoding. Every request is judged by the
 * contract (the documented schema, decisions.md §1 limits, the key rules): "must be refused" only
 * when the contract says so; the rest may succeed but must not fail.
 */
import { encode, type Encoding, ENCODINGS } from '../helper.ts';
import type { Random } from './random.ts';
import { accepts, example, querySchema, type JsonSchema, type Operation, type Param } from './schema.ts';

export interface Limits {
  /** Bytes of one field. */
  field: number;
  /** Fields in one body. */
  fields: number;
  /** Bytes of a whole body. */
  body: number;
}

export interface FuzzCase {
  /** What was done to the request, for the report. */
  label: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  /** The contract refuses it: only a 4xx is right. */
  mustReject: boolean;
  /** No table may change, whatever the answer: a GET, an id that names nothing, a refusal. */
  mustNotChange: boolean;
}

export interface CaseContext {
  rng: Random;
  /** A value naming seeded data for a parameter or field of this operation (seed.ts). */
  known(name: string): unknown;
  keys: { admin: string; api: string };
  /** Every documented operation: a "wrong" method may be another route's right one. */
  routes: Operation[];
  limits: Limits;
}

type Query = Record<string, string | string[]>;

/** A body the fuzzer could not express as a value: its verdict comes with it. */
interface RawBody {
  raw: string | Buffer;
  contentType?: string;
  refused: boolean;
}

/** One change to the operation's valid request. */
interface Draft {
  label: string;
  method?: string;
  /** Path parameters, already percent-encoded as they go into the URL. */
  path?: Record<string, string>;
  query?: Query;
  /** Appended to the query string as is (bad percent-encoding): judged as not there. */
  rawQuery?: string;
  /** A value encoded as `as`; a raw body; or null for no body at all. */
  body?: { value: unknown; as: Encoding } | RawBody | null;
  /** The API key; null sends none. */
  key?: string | null;
  headers?: Record<string, string>;
  /** Percent-encode one letter of the path's fixed text, which the router decodes. */
  encodeLetter?: boolean;
  /** Refused whatever the schemas say (no key, malformed body, wrong method). */
  refused?: boolean;
  /** A path id that names nothing. */
  unknownId?: boolean;
}

/** Ids of the right form that name nothing (seeded ids are small). */
const UNKNOWN_IDS = ['0', '987654321', '999999999999999999'];

/** Values tried in place of a valid one: wrong types, edges, huge and odd values. */
function variants(schema: JsonSchema, limits: Limits): unknown[] {
  const out: unknown[] = [
    ['1', '2'],
    [],
    '',
    ' ',
    'abc',
    '-1',
    '0',
    '1.5',
    '1e3',
    '1e999',
    '0x1F',
    ' 7',
    '9'.repeat(25),
    UNKNOWN_IDS[1],
    'true',
    'null',
    true,
    false,
    null,
    -1,
    0,
    1.5,
    1e308,
    2 ** 53 + 2,
    -(2 ** 31) - 1,
    2 ** 31,
    "' or '1'='1",
    '<script>alert(1)</script>',
    '../../etc/passwd',
    '%zz',
    '{username}',
    // at the field limit, one byte over, and over it in bytes while under it in characters
    'y'.repeat(limits.field),
    'y'.repeat(limits.field + 1),
    'é'.repeat(limits.field / 2 + 1),
  ];
  if (!schema.type && !schema.anyOf) {
    // A field the schema leaves open (the buy's `products`): the nested shapes bracket keys make,
    // with odd ids, quantities and variables inside.
    out.push(
      [{ id: UNKNOWN_IDS[1] }],
      [{ id: '1', quantity: '0' }],
      [{ id: '1', quantity: '101' }],
      [{ id: '1', quantity: '1e999' }],
      [{ id: '1', variables: { x: ['a', 'b'] } }],
      [{ id: '1', variables: 'x' }],
      [[['1']]],
      { id: { id: '1' } },
      ['1', { x: '1' }],
    );
  }
  for (const branch of schema.anyOf ?? [schema]) {
    if (branch.minimum !== undefined) out.push(branch.minimum - 1, branch.minimum);
    if (branch.maximum !== undefined) out.push(branch.maximum + 1, branch.maximum);
    if (branch.minLength) out.push('x'.repeat(branch.minLength - 1));
    if (branch.maxLength !== undefined) out.push('x'.repeat(branch.maxLength), 'x'.repeat(branch.maxLength + 1));
    if (branch.enum) out.push(`${String(branch.enum[0])}x`);
    if (branch.type === 'array') {
      const item = branch.items ? example(branch.items) : '1';
      out.push(
        [{ x: '1' }],
        Array.from({ length: (branch.maxItems ?? 5) + 1 }, () => item),
      );
    }
  }
  return out;
}

/** Control characters of each kind (C0, DEL, C1, the line and paragraph separators): in a game command, a line break starts another one. */
const CONTROL_TEXT = [
  'x\nop fuzz',
  'x\r\nop fuzz',
  'x\rop fuzz',
  'x\u2028op fuzz',
  'x\u2029op fuzz',
  'x\u0085op fuzz',
  'a\u0000b',
  'x\u007f',
  'x\u009b',
  '\u001b[31mx',
  'x\top',
  'x\vx\f',
];
/**
 * Text a person may type that must never reach a game command, a URL or a header as it is
 * (issue 44): control characters, non-ASCII, and very long values. Every text field and
 * parameter gets one of them each round.
 */
function hostileText(limits: Limits): string[] {
  return [
    ...CONTROL_TEXT,
    'é😀',
    'e\u0301\u202eİ\ufeff',
    '日本'.repeat(500),
    // long, its line break past where a check that reads only the start would stop; at the field limit in 4-byte characters
    `${'y'.repeat(4096)}\nop fuzz`,
    '😀'.repeat(limits.field / 4),
  ];
}
/** Text values take one of the VARIANTS_PER_FIELD slots, so a run sends as many requests as before. */
const takesText = (schema: JsonSchema) => (schema.anyOf ?? [schema]).some((branch) => branch.type === 'string');

/** For a report line: non-ASCII escaped, so a line separator cannot break the TAP stream. */
const ascii = (text: string) => text.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * Values strict types refuse wherever a number is expected (issue 16): booleans, null, a sign,
 * hex, an exponent, spaces, a list. Every field of every route gets some of them each round.
 */
const STRICT = [true, false, null, '0x10', '+5', ' 5', '5 ', '1e2', '1_000', ['1']];
const STRICT_PER_FIELD = 3;

/** How the server reads a JSON body: a number not written in plain digits stays the text it was written as. */
function parseJsonAsServer(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && context?.source !== undefined && !/^-?[0-9]+(\.[0-9]+)?$/.test(context.source) ? context.source : value,
  );
}

/** An object is no scalar, array or string under any coercion: always a wrong type for a field. */
const WRONG_TYPE = { x: '1' };
const VARIANTS_PER_FIELD = 4;

/** Path parameter values: odd numbers, dot segments, encoded slashes, bad encodings, length. */
const PATH_TRICKS = [
  '-1',
  '1.5',
  '1e3',
  '0x10',
  '+1',
  '%201',
  '99999999999999999999999',
  'abc',
  '..',
  '.',
  '%2e%2e',
  '%2F',
  '1%2F..%2F1',
  '%zz',
  '%ff%fe',
  '%00',
  '%C3%A9',
  '',
  'x'.repeat(10_000),
  // control characters and non-ASCII, percent-encoded as a URL carries them
  '1%0Aop',
  '1%0D%0Aop',
  '%E2%80%A8',
  '%C2%85',
  '%7F',
  '%1B',
  '%F0%9F%98%80',
  '%ED%A0%80',
];

/** Bodies no encoding of a value gives; the boundary is fixed so the bytes are the same every run. */
function rawBodies(base: Record<string, unknown>, limits: Limits): (RawBody & { label: string })[] {
  const json = JSON.stringify(base);
  const withField = (field: string) => (json === '{}' ? `{${field}}` : `${json.slice(0, -1)},${field}}`);
  const form = encode(base, 'urlencoded').payload;
  const boundary = 'fuzzboundary';
  const mp = `multipart/form-data; boundary=${boundary}`;
  const parts = [...new URLSearchParams(form)].map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('');
  const depth = 100_000;
  // `\u0001` marks where bytes that are no UTF-8 go
  const badUtf8 = (text: string) => {
    const [before, after] = text.split('\u0001');
    return Buffer.concat([Buffer.from(before!), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(after!)]);
  };
  return [
    { label: 'JSON cut off', raw: '{"a":', contentType: 'application/json', refused: true },
    { label: 'JSON array', raw: '[1,2]', contentType: 'application/json', refused: true },
    { label: 'JSON string', raw: '"x"', contentType: 'application/json', refused: true },
    { label: 'JSON number', raw: '12', contentType: 'application/json', refused: true },
    { label: 'the body wrapped in a JSON array', raw: `[${json}]`, contentType: 'application/json', refused: false },
    { label: 'JSON null', raw: 'null', contentType: 'application/json', refused: false },
    { label: 'JSON with a byte-order mark', raw: `\uFEFF${json}`, contentType: 'application/json', refused: false },
    { label: 'invalid UTF-8 in JSON', raw: badUtf8(withField('"extra":"\u0001"')), contentType: 'application/json', refused: false },
    { label: `JSON nested ${depth} deep`, raw: withField(`"extra":${'['.repeat(depth)}${']'.repeat(depth)}`), contentType: 'application/json', refused: false },
    { label: 'JSON with a charset', raw: json, contentType: 'application/json; charset=utf-8', refused: false },
    { label: 'JSON content type in capitals', raw: json, contentType: 'Application/JSON', refused: false },
    { label: 'text/plain', raw: json, contentType: 'text/plain', refused: true },
    { label: 'application/xml', raw: '<a>1</a>', contentType: 'application/xml', refused: true },
    { label: 'a body without content type', raw: form, refused: false },
    {
      label: 'bad percent-encoding and broken brackets',
      raw: `${form}&%zz=%&%ff%fe=1&a[=1&b]]=1&&&==`,
      contentType: 'application/x-www-form-urlencoded',
      refused: false,
    },
    {
      label: 'prototype keys',
      raw: `${form}&__proto__[polluted]=1&constructor[prototype][polluted]=1`,
      contentType: 'application/x-www-form-urlencoded',
      refused: false,
    },
    {
      label: 'brackets nested past the depth limit',
      raw: `${form}&a[b][c][d][e][f][g][h]=1`,
      contentType: 'application/x-www-form-urlencoded',
      refused: false,
    },
    { label: 'invalid UTF-8 in a form', raw: badUtf8(`${form}&extra=\u0001`), contentType: 'application/x-www-form-urlencoded', refused: false },
    { label: 'multipart without boundary', raw: parts, contentType: 'multipart/form-data', refused: true },
    { label: 'multipart cut off', raw: `${parts}--${boundary}\r\nContent-Disposition: form-data; name="extra"\r\n\r\nabc`, contentType: mp, refused: true },
    { label: 'multipart without parts', raw: 'garbage', contentType: mp, refused: false },
    {
      label: 'multipart part without a name',
      raw: `${parts}--${boundary}\r\nContent-Disposition: form-data\r\n\r\nx\r\n--${boundary}--\r\n`,
      contentType: mp,
      refused: false,
    },
    {
      label: 'multipart fields sent as files',
      raw: `${parts.replaceAll(/name="([^"]*)"/g, 'name="$1"; filename="$1.txt"')}--${boundary}--\r\n`,
      contentType: mp,
      refused: false,
    },
    {
      label: 'invalid UTF-8 in multipart',
      raw: badUtf8(`${parts}--${boundary}\r\nContent-Disposition: form-data; ` + `name="extra"\r\n\r\n\u0001\r\n--${boundary}--\r\n`),
      contentType: mp,
      refused: false,
    },
    { label: 'multipart/mixed', raw: `${parts}--${boundary}--\r\n`, contentType: `multipart/mixed; boundary=${boundary}`, refused: false },
    {
      label: 'a multipart file over the field limit',
      raw: `${parts}--${boundary}\r\nContent-Disposition: form-data; name="extra"; filename="x"\r\n\r\n${'f'.repeat(limits.field + 1)}\r\n--${boundary}--\r\n`,
      contentType: mp,
      refused: true,
    },
  ];
}
const RAW_BODIES_PER_ROUND = 8;

/** What the server makes of a form-encoded value: strings, and no empty arrays or objects. */
function asForm(value: unknown): unknown {
  if (value === undefined) return undefined;
  if (value === null) return '';
  if (Array.isArray(value)) {
    const items = value.map(asForm).filter((v) => v !== undefined);
    return items.length ? items : undefined;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value)
      .map(([k, v]) => [k, asForm(v)] as const)
      .filter(([, v]) => v !== undefined);
    return entries.length ? Object.fromEntries(entries) : undefined;
  }
  return String(value);
}

/** Over a decisions.md §1 limit: a field over the field limit or more fields than allowed. */
function overLimits(value: unknown, limits: Limits): boolean {
  let fields = 0;
  let tooLong = false;
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
    else {
      fields++;
      if (typeof v === 'string' && Buffer.byteLength(v) > limits.field) tooLong = true;
    }
  };
  walk(value);
  return tooLong || fields > limits.fields;
}

const hasBody = (method: string) => method === 'POST' || method === 'PUT' || method === 'PATCH';
/**
 * A path parameter naming the thing the route reads or changes: numbers only, or named as an id
 * (`{platform}` and the `{user}` of credits/set are not, nor one documented as "Ignored", like the
 * id of the ticket-create path).
 */
const isId = (p: Param) =>
  (/(^id|Id|_id|ID)$/.test(p.name) || !accepts(p.schema, 'abc')) && !/^Ignored\b/.test(p.description ?? '') && UNKNOWN_IDS.every((id) => accepts(p.schema, id));

function queryString(query: Query): string {
  const pairs: string[] = [];
  for (const [k, v] of Object.entries(query)) {
    for (const item of Array.isArray(v) ? v : [v]) pairs.push(`${encodeURIComponent(k)}=${encodeURIComponent(item)}`);
  }
  return pairs.join('&');
}

/** `/api/users` → `/api/u%73ers`: one letter of the fixed text, percent-encoded. */
function encodeOneLetter(path: string, rng: Random): string {
  const letters = [...path.matchAll(/[a-z]/g)].filter((m) => {
    const open = path.lastIndexOf('{', m.index);
    return open === -1 || path.lastIndexOf('}', m.index) > open;
  });
  const { index } = rng.pick(letters);
  return `${path.slice(0, index)}%${path.charCodeAt(index).toString(16)}${path.slice(index + 1)}`;
}

export function casesFor(op: Operation, ctx: CaseContext): FuzzCase[] {
  const { rng, limits } = ctx;
  const isApi = op.path.startsWith('/api/');
  const isAdmin = op.path.startsWith('/api/admin/');
  const valueFor = (name: string, schema: JsonSchema) => ctx.known(name) ?? example(schema);

  const basePath = Object.fromEntries(op.pathParams.map((p) => [p.name, encodeURIComponent(String(valueFor(p.name, p.schema)))]));
  // Optional parameters and fields come and go between rounds, so both their presence and their
  // absence are covered (and "exactly one of" rules the schema cannot say are met now and then).
  const keep = (isRequired: boolean) => isRequired || rng.chance(0.5);
  const baseQuery: Query = {};
  for (const p of op.query) {
    const value = valueFor(p.name, p.schema);
    if (keep(p.required && p.schema.default === undefined) && value !== undefined) baseQuery[p.name] = String(value);
  }
  const bodySchema = hasBody(op.method) ? op.body : undefined;
  const required = new Set(bodySchema?.required ?? []);
  const baseBody: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(bodySchema?.properties ?? {})) {
    const value = valueFor(name, schema);
    if (keep(required.has(name)) && value !== undefined) baseBody[name] = value;
  }
  const encoding = () => rng.pick(ENCODINGS);
  const hostile = hostileText(limits);
  /** A field's odd values for this round: one of them hostile text when the field takes text. */
  const fieldValues = (schema: JsonSchema) =>
    takesText(schema)
      ? [...rng.sample(variants(schema, limits), VARIANTS_PER_FIELD - 1), rng.pick(hostile)]
      : rng.sample(variants(schema, limits), VARIANTS_PER_FIELD);
  const withBody = (value: unknown) => ({ value, as: encoding() });

  const render = (d: Draft): FuzzCase => {
    const method = d.method ?? op.method;
    const pathValues = { ...basePath, ...d.path };
    const template = d.encodeLetter ? encodeOneLetter(op.path, rng) : op.path;
    const query = d.query ?? baseQuery;
    const qs = [queryString(query), d.rawQuery].filter(Boolean).join('&');
    const url = template.replace(/\{([^}]+)\}/g, (_, name: string) => pathValues[name]!) + (qs ? `?${qs}` : '');
    const headers: Record<string, string> = { ...d.headers };
    const key = d.key === undefined ? (isAdmin ? ctx.keys.admin : ctx.keys.api) : d.key;
    if (isApi && key !== null) headers['x-api-key'] = key;

    let refused = Boolean(d.refused);
    for (const p of op.pathParams) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(pathValues[p.name]!);
      } catch {
        continue; // undecodable: whether it is a 400 or a 404 is the router's business
      }
      // an empty or dot segment changes which route the URL names: no verdict on the parameter
      if (decoded === '' || decoded === '.' || decoded === '..') continue;
      if (!accepts(p.schema, decoded)) refused = true;
    }
    if (!accepts(querySchema(op.query), query)) refused = true;

    const body = d.body === undefined && bodySchema ? withBody(baseBody) : d.body;
    let payload: string | Buffer | undefined;
    if (body && 'raw' in body) {
      payload = body.raw;
      if (body.contentType) headers['content-type'] = body.contentType;
      if (bodySchema) refused ||= body.refused;
    } else if (body) {
      const encoded = encode(body.value as Record<string, unknown>, body.as);
      payload = encoded.payload;
      Object.assign(headers, encoded.headers);
      if (bodySchema) {
        const seen = body.as === 'json' ? parseJsonAsServer(payload) : (asForm(body.value) ?? {});
        refused ||= !accepts(bodySchema, seen) || overLimits(seen, limits) || Buffer.byteLength(payload) > limits.body;
      }
    } else if (bodySchema) {
      refused ||= !accepts(bodySchema, {});
    }
    const as = body && 'as' in body ? ` [${body.as}]` : '';
    return {
      label: d.label + as,
      method,
      url,
      headers,
      payload,
      mustReject: refused,
      mustNotChange: refused || method === 'GET' || Boolean(d.unknownId),
    };
  };

  const drafts: Draft[] = [
    {
      label: 'valid request with an extra field',
      query: { ...baseQuery, fuzzExtra: '1' },
      body: bodySchema ? withBody({ ...baseBody, fuzzExtra: 'x' }) : undefined,
    },
  ];
  drafts.push({ label: 'accepts only XML', headers: { accept: 'application/xml' } });

  if (isApi) {
    drafts.push({ label: 'no API key', key: null, refused: true });
    drafts.push({ label: 'wrong API key', key: rng.pick(['nope', `ck_${'0'.repeat(48)}`, 'k'.repeat(10_000), ctx.keys.admin.toUpperCase()]), refused: true });
    drafts.push({ label: 'no API key, one letter of the path percent-encoded', key: null, encodeLetter: true, refused: true });
    if (isAdmin) {
      drafts.push({ label: 'key without the admin scope', key: ctx.keys.api, refused: true });
      drafts.push({ label: 'key without the admin scope, one letter of the path percent-encoded', key: ctx.keys.api, encodeLetter: true, refused: true });
    }
  }

  // A method no route serves at this URL.
  const concrete = (path: string) => new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
  const url = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => basePath[name]!);
  const served = new Set(ctx.routes.filter((r) => concrete(r.path).test(url)).map((r) => r.method));
  const unserved = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => !served.has(m));
  drafts.push({ label: 'method not served here', method: rng.pick(unserved), body: null, refused: true });

  for (const p of op.pathParams) {
    for (const value of rng.sample(PATH_TRICKS, 5)) drafts.push({ label: `path ${p.name}=${value.slice(0, 40)}`, path: { [p.name]: value } });
    if (isId(p)) {
      for (const id of UNKNOWN_IDS) drafts.push({ label: `path ${p.name}=${id} (names nothing)`, path: { [p.name]: id }, unknownId: true });
    }
  }

  for (const p of op.query) {
    const values = fieldValues(p.schema).filter((v) => v !== null && (typeof v !== 'object' || (Array.isArray(v) && v.length > 0)));
    // the query cannot carry an object, so a repeated key is its wrong type that is always tried
    for (const v of [['1', '2'], ...values]) {
      const value = Array.isArray(v) ? v.map(String) : String(v);
      drafts.push({ label: `query ${p.name}=${ascii(JSON.stringify(value).slice(0, 60))}`, query: { ...baseQuery, [p.name]: value } });
    }
    for (const v of rng.sample(
      STRICT.filter((x) => typeof x === 'string'),
      STRICT_PER_FIELD,
    )) {
      drafts.push({ label: `strict: query ${p.name}=${JSON.stringify(v)}`, query: { ...baseQuery, [p.name]: String(v) } });
    }
    drafts.push({
      label: `query ${p.name} badly percent-encoded`,
      query: baseQuery,
      rawQuery: `${p.name}=${rng.pick(['%zz', '%', '%ff%fe', '%00', '%C0%AF'])}`,
    });
  }

  if (bodySchema) {
    drafts.push({ label: 'no body', body: null });
    for (const name of required) {
      const { [name]: _, ...rest } = baseBody;
      drafts.push({ label: `body without ${name}`, body: withBody(rest) });
    }
    for (const [name, schema] of Object.entries(bodySchema.properties ?? {})) {
      for (const value of [WRONG_TYPE, ...fieldValues(schema)]) {
        drafts.push({ label: `body ${name}=${ascii(JSON.stringify(value).slice(0, 60))}`, body: withBody({ ...baseBody, [name]: value }) });
      }
    }
    for (const name of Object.keys(bodySchema.properties ?? {})) {
      for (const value of rng.sample(STRICT, STRICT_PER_FIELD)) {
        // booleans and null exist only in JSON; a form sends their text
        const as = typeof value === 'boolean' || value === null ? 'json' : encoding();
        drafts.push({ label: `strict: body ${name}=${JSON.stringify(value)}`, body: { value: { ...baseBody, [name]: value }, as } });
      }
      // A JSON number in exponent notation, which JSON.stringify never writes.
      const raw = JSON.stringify({ ...baseBody, [name]: 0 }).replace(new RegExp(`"${name}":0([,}])`), `"${name}":1e2$1`);
      drafts.push({
        label: `strict: body ${name}=1e2 as a JSON number`,
        body: { raw, contentType: 'application/json', refused: !accepts(bodySchema, parseJsonAsServer(raw)) },
      });
    }
    // Two fields broken at once, for checks that compare fields (a discount above the price).
    const pair = rng.sample(Object.entries(bodySchema.properties ?? {}), 2);
    if (pair.length === 2) {
      const changed = Object.fromEntries(pair.map(([name, schema]) => [name, rng.pick(variants(schema, limits))]));
      drafts.push({ label: `body ${ascii(JSON.stringify(changed).slice(0, 120))}`, body: withBody({ ...baseBody, ...changed }) });
    }
    // A product line's free-text variable is rendered into a game command: the seeded product's line with a control character in it
    // (the final check of openapi.fuzz.ts finds any that was queued).
    const lineField = ['products', 'lines'].find((name) => bodySchema.properties?.[name]);
    const seededLine = lineField && (ctx.known(lineField) as unknown[] | undefined)?.[0];
    if (lineField && seededLine !== undefined) {
      const value = rng.pick(CONTROL_TEXT);
      const variables = { name: value };
      const line = typeof seededLine === 'object' ? { ...seededLine, variables } : { id: seededLine, quantity: '1', variables };
      // The required fields and the seeded buyer only: an optional code or a second buyer would be refused first.
      const plain = Object.fromEntries(Object.entries(baseBody).filter(([name]) => required.has(name)));
      drafts.push({
        label: `body ${lineField}[0].variables.name=${ascii(JSON.stringify(value).slice(0, 60))}`,
        body: withBody({ ...plain, userID: ctx.known('userID'), [lineField]: [line] }),
      });
    }
    const extraFields = Object.fromEntries(Array.from({ length: limits.fields + 1 }, (_, i) => [`f${i}`, '1']));
    drafts.push({ label: `${limits.fields + 1} extra fields`, body: withBody({ ...baseBody, ...extraFields }) });
    // Extra fields of nearly the field limit: just under the body limit, then just over it. Under
    // it the encoding does not matter to the route, and JSON is the cheap one to build.
    const piece = limits.field - 1024;
    const padding = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`pad${i}`, 'p'.repeat(piece)]));
    const fit = Math.floor((limits.body - 64 * 1024) / piece);
    drafts.push({ label: 'body just under the size limit', body: { value: { ...baseBody, ...padding(fit) }, as: 'json' } });
    drafts.push({ label: 'body over the size limit, every field within its own', body: withBody({ ...baseBody, ...padding(fit + 2) }) });
    for (const raw of rng.sample(rawBodies(baseBody, limits), RAW_BODIES_PER_ROUND)) drafts.push({ label: raw.label, body: raw });
  } else {
    // GET, DELETE and bodiless POSTs: clients send stray content types and bodies too
    drafts.push({ label: 'empty form body', body: { raw: '', contentType: 'application/x-www-form-urlencoded', refused: false } });
    drafts.push({ label: 'a JSON body nobody asked for', body: { raw: '{"fuzzExtra":1}', contentType: 'application/json', refused: false } });
  }

  return drafts.map(render);
}
