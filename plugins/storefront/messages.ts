/**
 * Every player-facing string of the storefront, by language. A language is complete when it has
 * every key English has (a test checks); `{name}` marks a value put in.
 */
import { type Catalogue, en, type MessageKey } from './messages-en.ts';
import { de } from './messages-de.ts';

export type { Catalogue, MessageKey };

export const LANGUAGES = { en: en as Catalogue, de } as const;
export type Language = keyof typeof LANGUAGES;

export type Translate = (key: MessageKey, values?: Record<string, string | number>) => string;

const translators = new Map<Language, Translate>();

/** The language's translate function (one per language, made once). */
export function translator(lang: Language): Translate {
  let made = translators.get(lang);
  if (!made) translators.set(lang, (made = translate(LANGUAGES[lang])));
  return made;
}

function translate(catalogue: Catalogue): Translate {
  return (key, values) => {
    const text = catalogue[key];
    return values ? text.replace(/\{(\w+)\}/g, (m, name: string) => (Object.hasOwn(values, name) ? String(values[name]) : m)) : text;
  };
}

/** Headers seen and what they asked for (browsers send a handful of distinct ones). */
const PICKED = new Map<string, Language | undefined>();
const PICKED_MAX = 500;

/** The first language of an Accept-Language header we have (by its q weights), else `fallback`. */
export function pickLanguage(header: string | undefined, fallback: Language): Language {
  if (!header) return fallback;
  if (header.length > 200) return wantedLanguage(header) ?? fallback;
  if (!PICKED.has(header)) {
    if (PICKED.size >= PICKED_MAX) PICKED.clear();
    PICKED.set(header, wantedLanguage(header));
  }
  return PICKED.get(header) ?? fallback;
}

function wantedLanguage(header: string): Language | undefined {
  const wanted = header
    .split(',')
    .slice(0, 20)
    .map((part, i) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find(Boolean);
      return { lang: tag.trim().toLowerCase().split('-')[0]!, q: q === undefined ? 1 : Number(q), i };
    })
    .filter((w) => w.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  return wanted.find((w) => Object.hasOwn(LANGUAGES, w.lang))?.lang as Language | undefined;
}
