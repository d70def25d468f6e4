/**
 * Every string of the mails, by language (the storefront's languages); the templates in
 * `templates/` put them together. `{name}` marks a value put in. Another language's type makes it
 * name every key English has.
 */
import type { MailLanguage } from './contract.ts';

const en = {
  greeting: 'Hello {name},',
  signature: '— {site}',
  'order.subject': 'Your order #{id} at {site}',
  'order.intro': 'thank you for your order #{id} of {date}.',
  'order.items': 'What you bought:',
  'order.total': 'Total: {total}',
  'order.link': 'Follow its delivery on your account page: {link}',
  'order.guestLink': 'Follow its delivery here: {link}',
  'order.test': 'This is a test order: no money was paid.',
  'order.taxIncluded': 'Including tax {country}: {tax}',
  'order.taxAdded': 'Tax {country} added: {tax}, paid in all: {paid}',
  'order.taxNumber': "Seller's tax number: {number}",
  'subscription.reminder.subject': 'Your {product} subscription at {site} renews soon',
  'subscription.reminder.intro': 'your subscription to {product} renews on {date}: {amount} will be taken from your balance then.',
  'subscription.receipt.subject': 'Your {product} subscription at {site} was renewed',
  'subscription.receipt.intro': 'your subscription to {product} was renewed: {amount} paid. It now runs to {date}.',
  'subscription.failed.subject': 'Your {product} subscription at {site}: the payment failed',
  'subscription.failed.intro':
    'the renewal of your subscription to {product} ({amount}) could not be paid. It runs on until {date}: pay before then to keep it.',
  'topup.subject': 'Your top-up at {site}',
  'topup.intro': 'your payment of {amount} has arrived.',
  'topup.credits': '{credits} were added to your balance.',
  'ticket.subject': 'New answer to your ticket “{title}”',
  'ticket.intro': 'staff answered your ticket “{title}”:',
  'ticket.link': 'Read and answer it here: {link}',
  'verify.subject': 'Confirm your email address for {site}',
  'verify.intro': 'please confirm that this is your email address by opening this link:',
  'verify.button': 'Confirm my address',
  'verify.expires': 'The link works once, for {hours} hours. If you did not register, ignore this mail.',
  'reset.subject': 'Reset your password for {site}',
  'reset.intro': 'someone asked to reset the password of your account {name}. To choose a new one, open this link:',
  'reset.button': 'Choose a new password',
  'reset.expires': 'The link works once, for {minutes} minutes. If you did not ask for it, ignore this mail: your password stays as it is.',
  'test.subject': 'Test message from {site}',
  'test.body': 'This test message shows that {site} can send mail.',
};

const de: Record<keyof typeof en, string> = {
  greeting: 'Hallo {name},',
  signature: '— {site}',
  'order.subject': 'Deine Bestellung #{id} bei {site}',
  'order.intro': 'danke für deine Bestellung #{id} vom {date}.',
  'order.items': 'Was du gekauft hast:',
  'order.total': 'Summe: {total}',
  'order.link': 'Die Lieferung verfolgst du auf deiner Kontoseite: {link}',
  'order.guestLink': 'Die Lieferung verfolgst du hier: {link}',
  'order.test': 'Dies ist eine Testbestellung: Es wurde kein Geld bezahlt.',
  'order.taxIncluded': 'Darin enthaltene Steuer {country}: {tax}',
  'order.taxAdded': 'Hinzugefügte Steuer {country}: {tax}, insgesamt bezahlt: {paid}',
  'order.taxNumber': 'Steuernummer des Verkäufers: {number}',
  'subscription.reminder.subject': 'Dein Abo {product} bei {site} verlängert sich bald',
  'subscription.reminder.intro': 'dein Abo {product} verlängert sich am {date}: dann werden {amount} von deinem Guthaben abgebucht.',
  'subscription.receipt.subject': 'Dein Abo {product} bei {site} wurde verlängert',
  'subscription.receipt.intro': 'dein Abo {product} wurde verlängert: {amount} bezahlt. Es läuft jetzt bis {date}.',
  'subscription.failed.subject': 'Dein Abo {product} bei {site}: die Zahlung ist fehlgeschlagen',
  'subscription.failed.intro':
    'die Verlängerung deines Abos {product} ({amount}) konnte nicht bezahlt werden. Es läuft noch bis {date}: bezahle bis dahin, um es zu behalten.',
  'topup.subject': 'Deine Aufladung bei {site}',
  'topup.intro': 'deine Zahlung über {amount} ist angekommen.',
  'topup.credits': '{credits} wurden deinem Guthaben gutgeschrieben.',
  'ticket.subject': 'Neue Antwort auf dein Ticket „{title}“',
  'ticket.intro': 'das Team hat auf dein Ticket „{title}“ geantwortet:',
  'ticket.link': 'Hier liest und beantwortest du es: {link}',
  'verify.subject': 'Bestätige deine E-Mail-Adresse für {site}',
  'verify.intro': 'bitte bestätige mit diesem Link, dass dies deine E-Mail-Adresse ist:',
  'verify.button': 'Adresse bestätigen',
  'verify.expires': 'Der Link gilt einmal und {hours} Stunden lang. Wenn du dich nicht registriert hast, ignoriere diese Mail.',
  'reset.subject': 'Setze dein Passwort für {site} zurück',
  'reset.intro': 'jemand möchte das Passwort deines Kontos {name} zurücksetzen. Ein neues wählst du mit diesem Link:',
  'reset.button': 'Neues Passwort wählen',
  'reset.expires': 'Der Link gilt einmal und {minutes} Minuten lang. Wenn du das nicht warst, ignoriere diese Mail: dein Passwort bleibt, wie es ist.',
  'test.subject': 'Testnachricht von {site}',
  'test.body': 'Diese Testnachricht zeigt, dass {site} Mails versenden kann.',
};

export type MailKey = keyof typeof en;
export const MAIL_LANGUAGES: Record<MailLanguage, Record<MailKey, string>> = { en, de };

/** `sentence` with each `{name}` of `values` put in; a name without a value stays as written. */
export function fill(sentence: string, values: Record<string, string | number>): string {
  return sentence.replace(/\{(\w+)\}/g, (m, name: string) => (Object.hasOwn(values, name) ? String(values[name]) : m));
}

export function mailText(lang: MailLanguage, key: MailKey, values: Record<string, string | number> = {}): string {
  return fill(MAIL_LANGUAGES[lang][key], values);
}
