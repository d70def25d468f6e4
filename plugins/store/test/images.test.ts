/** Product images: uploaded on the console's product page, kept under their hash, served with long cache headers, shown on the storefront. */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import t from 'tap';
import { ADMIN_KEY, build, call, onMysql, scratchDir, sharedDatabaseUrl, type TestLike } from '../../../test/helper.ts';
import { grant, register, role, signInByForm } from '../../../test/browser.ts';
import { PNG } from '../../../test/fixtures.ts';

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(64)]);
const GIF = Buffer.concat([Buffer.from('GIF89a', 'latin1'), randomBytes(64)]);
const WEBP = Buffer.concat([Buffer.from('RIFF\x40\x00\x00\x00WEBPVP8 ', 'latin1'), randomBytes(64)]);
const MAX = 4096;

interface Upload {
  field?: string;
  filename: string;
  type?: string;
  data: Buffer;
}

/** A multipart body as a browser sends a form with a file input. */
function multipart(fields: Record<string, string>, file?: Upload) {
  const boundary = `----test${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = Object.entries(fields).map(([k, v]) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  if (file) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'image'}"; filename="${file.filename}"\r\nContent-Type: ` +
          `${file.type ?? 'application/octet-stream'}\r\n\r\n`,
      ),
      file.data,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

async function setUp(t: TestLike, config: unknown, databaseUrl?: string) {
  const app = await build(t, { config, databaseUrl });
  const adminId = await register(app, 'Alice');
  await grant(app, adminId, await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).split(';')[0]!;
  const page = await app.inject({ url: '/console/catalogue', headers: { cookie } });
  const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec(page.body)![1]!;
  const category = (await call(app, '/api/admin/store/categories', { body: { name: 'Ranks' } })).json().id;
  const product = (await call(app, '/api/admin/store/products', { body: { name: 'VIP', categoryID: category, price: '5.00' } })).json().id as string;
  const upload = (file?: Upload, token = csrf) => {
    const body = multipart({ _csrf: token }, file);
    return app.inject({ method: 'POST', url: `/console/catalogue/products/${product}/image`, headers: { cookie, ...body.headers }, payload: body.payload });
  };
  const image = async () => {
    const p = (await call(app, `/api/admin/store/products/${product}`)).json();
    return { imageID: p.imageID as string, imageType: p.imageType as string };
  };
  return { app, product, upload, image, cookie };
}
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const files = (folder: string) => (existsSync(folder) ? readdirSync(folder).sort() : []);

t.test('an image uploaded in the console is kept by hash, set on the product, served and shown', async (t) => {
  const folder = join(scratchDir(t), 'pictures');
  const { app, product, upload, image, cookie } = await setUp(t, { plugins: { store: { images: { folder, maxBytes: MAX } } } });

  const page = await app.inject({ url: `/console/catalogue/products/${product}`, headers: { cookie } });
  t.match(page.body, /<form id="product-image"[^>]*enctype="multipart\/form-data"/, 'the product page has the upload form');
  t.match(page.body, /type="file" accept="image\/png,image\/jpeg,image\/webp,image\/gif"/);

  for (const [data, type, mime] of [
    [PNG, 'png', 'image/png'],
    [JPEG, 'jpg', 'image/jpeg'],
    [WEBP, 'webp', 'image/webp'],
    [GIF, 'gif', 'image/gif'],
  ] as const) {
    // The browser's name and type say nothing: the bytes decide.
    const res = await upload({ filename: 'picture.txt', type: 'text/plain', data });
    t.equal(res.statusCode, 303, `${type}: saved`);
    t.same(await image(), { imageID: sha(data), imageType: type }, `${type}: the product's imageID is the hash, imageType the extension`);
    const served = await app.inject(`/images/${sha(data)}.${type}`);
    t.equal(served.statusCode, 200);
    t.equal(served.headers['content-type'], mime);
    t.equal(served.headers['cache-control'], 'public, max-age=31536000, immutable');
    t.equal(served.headers['x-content-type-options'], 'nosniff');
    t.ok(served.rawPayload.equals(data), `${type}: the same bytes`);
  }
  t.same(
    files(folder),
    [`${sha(GIF)}.gif`, `${sha(JPEG)}.jpg`, `${sha(PNG)}.png`, `${sha(WEBP)}.webp`].sort(),
    'one file per image, nothing half-written left',
  );

  const again = await Promise.all([1, 2, 3].map(() => upload({ filename: 'a.png', data: PNG })));
  t.same(
    again.map((r) => r.statusCode),
    [303, 303, 303],
    'the same image again, three times at once',
  );
  t.equal(files(folder).length, 4, 'is the same file');

  const listed = (await call(app, `/api/store/products/${product}`)).json();
  t.match(listed, { imageID: sha(PNG), imageType: 'png' }, 'the API gives it to the game plugin');

  const shop = await app.inject(`/product/${product}`);
  t.match(shop.body, `<img src="/images/${sha(PNG)}.png"`, 'the storefront product page shows it');
  t.match((await app.inject('/')).body + (await app.inject(`/category/${listed.categoryID}`)).body, `/images/${sha(PNG)}.png`, 'and the category page');

  for (const name of [`${sha(PNG)}.jpg`, `${'0'.repeat(64)}.png`, 'x.png', '..%2Fdb.sqlite', `${sha(PNG)}.png.part`]) {
    t.equal((await app.inject(`/images/${name}`)).statusCode, 404, `/images/${name}: not found`);
  }
});

t.test('bad uploads get an error beside the field and change nothing', async (t) => {
  const folder = scratchDir(t);
  const { app, upload, image } = await setUp(t, { plugins: { store: { images: { folder, maxBytes: MAX } } } });
  t.equal((await upload({ filename: 'a.png', data: PNG })).statusCode, 303);
  const before = await image();
  const cases: [string, Upload | undefined, RegExp][] = [
    ['too big', { filename: 'big.png', type: 'image/png', data: Buffer.concat([PNG, randomBytes(MAX)]) }, /larger than 4 KiB; nothing was changed/],
    ['not an image', { filename: 'evil.png', type: 'image/png', data: Buffer.from('<svg onload="alert(1)"></svg>') }, /not a PNG, JPEG, WebP or GIF image/],
    ['an empty file', { filename: 'empty.png', type: 'image/png', data: Buffer.alloc(0) }, /Choose an image file/],
    ['no file chosen', { filename: '', data: Buffer.alloc(0) }, /Choose an image file/],
    ['no file part', undefined, /Choose an image file/],
  ];
  for (const [what, file, message] of cases) {
    const res = await upload(file);
    t.equal(res.statusCode, 422, `${what}: refused`);
    t.match(res.body, /id="product-image-image-error"/, `${what}: the error is beside the field`);
    t.match(res.body, message, what);
    t.same(await image(), before, `${what}: the product keeps its image`);
  }
  const forged = await upload({ filename: 'b.gif', data: GIF }, 'f'.repeat(64));
  t.equal(forged.statusCode, 403, 'without the CSRF token: refused');
  t.same(await image(), before);
  t.same(readdirSync(folder), [`${sha(PNG)}.png`], 'no other file was written');

  // The API's own multipart bodies are read as before: a file part is its text, capped as any field.
  const product = (await call(app, '/api/admin/store/products')).json()[0].id;
  const api = multipart({}, { field: 'imageID', filename: 'id.txt', data: Buffer.from('vip') });
  const patched = await app.inject({
    method: 'PATCH',
    url: `/api/admin/store/products/${product}`,
    headers: { 'x-api-key': ADMIN_KEY, ...api.headers },
    payload: api.payload,
  });
  t.equal(patched.statusCode, 200, patched.body);
  t.equal(patched.json().imageID, 'vip');
});

t.test(
  'by default the images are beside the SQLite file, and imageBaseUrl still overrides the storefront',
  { skip: onMysql ? 'the SQLite file' : false },
  async (t) => {
    const url = await sharedDatabaseUrl(t);
    const { app, product, upload } = await setUp(t, { plugins: { storefront: { imageBaseUrl: 'https://cdn.example.org/shop/' } } }, url);
    t.equal((await upload({ filename: 'a.png', data: PNG })).statusCode, 303);
    t.ok(existsSync(join(dirname(url.slice('sqlite:'.length)), 'images', `${sha(PNG)}.png`)), 'images/ beside the database');
    t.match((await app.inject(`/product/${product}`)).body, `<img src="https://cdn.example.org/shop/${sha(PNG)}.png"`);
  },
);
