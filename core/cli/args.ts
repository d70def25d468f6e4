/** The command line of the project's CLIs, read by `node:util`'s parseArgs the same way in each. */
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

/** Prints the usage line and ends the process with 2, the code every CLI gives a wrong command line. */
export function usage(line: string): never {
  console.error(line);
  process.exit(2);
}

/**
 * The words and flags after `node <script>`: `options` declares the flags; an unknown flag, or one
 * missing its value, prints `line` and exits 2.
 */
export function commandLine<const O extends ParseArgsOptionsConfig>(line: string, options: O) {
  try {
    return parseArgs({ options, allowPositionals: true, strict: true });
  } catch {
    return usage(line);
  }
}
