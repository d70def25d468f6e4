/** SMTP through nodemailer: one pooled-free transport, every send bounded by the configured timeout. */
import nodemailer, { type Transporter } from 'nodemailer';

export interface SmtpOptions {
  host: string;
  port: number;
  /** TLS from the first byte (port 465); otherwise STARTTLS when the server offers it. */
  secure: boolean;
  user: string;
  from: string;
  timeoutMs: number;
}

export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** The same message as HTML; a mail program falls back to `text` (multipart/alternative). */
  html?: string;
}

/** Whether a send failed for good: the server refused with a permanent (5xx) reply; anything else is worth a retry. */
export function permanent(err: unknown): boolean {
  const code = (err as { responseCode?: number }).responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
}

export class Mailer {
  readonly #transport: Transporter;
  readonly #from: string;

  constructor(smtp: SmtpOptions, password: string | undefined) {
    this.#from = smtp.from;
    this.#transport = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      auth: smtp.user ? { user: smtp.user, pass: password ?? '' } : undefined,
      connectionTimeout: smtp.timeoutMs,
      greetingTimeout: smtp.timeoutMs,
      socketTimeout: smtp.timeoutMs,
    });
  }

  async send(mail: Mail): Promise<void> {
    await this.#transport.sendMail({ from: this.#from, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html });
  }

  close(): void {
    this.#transport.close();
  }
}
