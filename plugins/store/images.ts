/**
 * Product images: a file uploaded in the console is kept under the hash of its bytes, so a name
 * never changes what it shows and browsers may keep it for good; the product's imageID is the
 * hash and its imageType the extension, as clients build `<imageID>.<imageType>` (api.md).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { PRODUCT_IMAGE_PATH, PRODUCT_IMAGE_TYPES, storedImage } from './contract.ts';

export const imageOptions = Type.Object(
  {
    /** Where uploaded images are kept; empty: `images/` beside the SQLite file, `data/images` on MySQL. Relative to the install. */
    folder: Type.String({ default: '' }),
    /** Largest image the console takes, in bytes. */
    maxBytes: Type.Integer({ minimum: 1024, default: 2 * 1024 * 1024 }),
  },
  { default: {} },
);

/** The types taken, told by their first bytes, not by the name or type the browser sends. */
const TYPES: { ext: keyof typeof PRODUCT_IMAGE_TYPES; is: (b: Buffer) => boolean }[] = [
  { ext: 'png', is: (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) },
  { ext: 'jpg', is: (b) => b.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff])) },
  { ext: 'webp', is: (b) => b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP' },
  { ext: 'gif', is: (b) => /^GIF8[79]a$/.test(b.toString('latin1', 0, 6)) },
];

export const IMAGE_ACCEPT = Object.values(PRODUCT_IMAGE_TYPES).join(',');

/** Where the images are kept: the option's folder, or `images/` beside the SQLite file, or `data/images`; the archive's files come from here too. */
export function imageFolder(options: { folder: string }, databaseFile: string | undefined): string {
  const beside = databaseFile && databaseFile !== ':memory:' ? join(dirname(databaseFile), 'images') : join('data', 'images');
  return resolve(options.folder || beside);
}

export class ProductImages {
  readonly folder: string;
  readonly maxBytes: number;

  constructor(options: { folder: string; maxBytes: number }, db: Database) {
    this.folder = imageFolder(options, db.file);
    this.maxBytes = options.maxBytes;
  }

  /** Keeps an image and says its imageID and imageType; anything but a PNG, JPEG, WebP or GIF is refused. */
  async save(data: Buffer): Promise<{ imageId: string; imageType: string }> {
    const type = TYPES.find((t) => t.is(data));
    if (!type) throw new DomainError('VALIDATION_ERROR', 'image: the file is not a PNG, JPEG, WebP or GIF image.');
    const imageId = createHash('sha256').update(data).digest('hex');
    const file = join(this.folder, `${imageId}.${type.ext}`);
    await mkdir(this.folder, { recursive: true });
    // Written aside and renamed, so a reader never gets half a file under the final name.
    const partial = `${file}.${randomBytes(6).toString('hex')}.part`;
    try {
      await writeFile(partial, data);
      await rename(partial, file);
    } finally {
      await rm(partial, { force: true });
    }
    return { imageId, imageType: type.ext };
  }

  routes(app: FastifyInstance): void {
    // Files for browsers and game plugins, not an API operation: out of the OpenAPI document.
    app.get<{ Params: { name: string } }>(`${PRODUCT_IMAGE_PATH}:name`, { schema: { hide: true } }, async (request, reply) => {
      const [imageId = '', imageType = ''] = request.params.name.split('.');
      const known = storedImage({ imageId, imageType }) === `${PRODUCT_IMAGE_PATH}${request.params.name}`;
      const data = known ? await readFile(join(this.folder, request.params.name)).catch(() => undefined) : undefined;
      if (!data) throw new DomainError('NOT_FOUND', 'No such image.');
      return reply
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('x-content-type-options', 'nosniff')
        .type(PRODUCT_IMAGE_TYPES[imageType as keyof typeof PRODUCT_IMAGE_TYPES])
        .send(data);
    });
  }
}
