// Reads a setting from .dev.vars (the local development settings `npm run dev` uses).
import { readFileSync } from 'node:fs';

/** The first comma-separated value of `key` in .dev.vars, or undefined. */
export function devVar(key) {
  try {
    const line = readFileSync('.dev.vars', 'utf8').split('\n').find((l) => l.startsWith(`${key}=`));
    return line?.slice(key.length + 1).trim().split(',')[0];
  } catch {
    return undefined;
  }
}
