/**
 * The archive's gzipped tar (docs/export-format.md), written part by part through one read buffer
 * used again and again. node-tar's writer took a new buffer for every read of a part; on a big
 * database those dead buffers piled up outside V8's heap until a collection came, and the export's
 * peak grew with the size of its parts.
 */
import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip, type Gzip } from 'node:zlib';
import { Header, Pax } from 'tar';
import { READ_BYTES } from './format.ts';

const BLOCK = 512;

/** Resolves once gzip has taken the chunk in, so its memory may be written over. */
function put(gzip: Gzip, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => gzip.write(chunk, (err) => (err ? reject(err) : resolve())));
}

async function putFile(gzip: Gzip, dir: string, path: string, buf: Buffer): Promise<void> {
  const handle = await open(join(dir, path));
  try {
    const { size, mtime } = await handle.stat();
    const header = new Header({ path, mode: 0o644, size, mtime, type: 'File' });
    // A path longer than the header's fields goes in an extended header before it, as node-tar writes it.
    if (header.encode()) await put(gzip, new Pax({ path, size, mtime }).encode());
    await put(gzip, header.block!);
    let at = 0;
    while (at < size) {
      const { bytesRead } = await handle.read(buf, 0, Math.min(buf.length, size - at), at);
      if (!bytesRead) throw new Error(`${path} shrank while it was archived`);
      await put(gzip, buf.subarray(0, bytesRead));
      at += bytesRead;
    }
    if (size % BLOCK) await put(gzip, Buffer.alloc(BLOCK - (size % BLOCK)));
  } finally {
    await handle.close();
  }
}

/** Writes `paths` (relative to `dir`, in this order) into a gzipped tar at `file`. */
export async function writeTarGz(dir: string, paths: string[], file: string): Promise<void> {
  const gzip = createGzip();
  const written = pipeline(gzip, createWriteStream(file));
  try {
    const buf = Buffer.allocUnsafe(READ_BYTES);
    for (const path of paths) await putFile(gzip, dir, path, buf);
    // The end of a tar: two empty blocks.
    await put(gzip, Buffer.alloc(2 * BLOCK));
    gzip.end();
  } catch (err) {
    gzip.destroy(err as Error);
  }
  await written;
}
