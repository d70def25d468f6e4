/** Preloaded (`--import`) into the exporting or importing process: prints its peak resident memory as it exits, for bench/export.ts. */
import { writeSync } from 'node:fs';

process.on('exit', () => {
  // maxRSS is in KiB on Linux; written synchronously, since nothing asynchronous runs at exit.
  writeSync(1, `\nBENCH_MAX_RSS_KIB ${process.resourceUsage().maxRSS}\n`);
});
