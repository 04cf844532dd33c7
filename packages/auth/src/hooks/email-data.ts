import type { MailKind, MailMessage } from '../mailer/mailer.js'

/** Upstream's `email_action_type` of each mail kind (the mailer's own names differ for two). */
const ACTION_TYPES: Partial<Readonly<Record<MailKind, string>>> = {
  confirmation: 'signup',
  magic_link: 'magiclink',
}

/** The `email_data` of a send-email hook payload (upstream `mailer.EmailData`). */
export interface EmailData {
  token: string
  token_hash: string
  redirect_to: string
  email_action_type: string
  site_url: string
  token_new: string
  token_hash_new: string
  old_email: string
  old_phone: string
  provider: string
  factor_type: string
}

/**
 * The `email_data` of a mail, as upstream fills it: `site_url` is the auth server's
 * `API_EXTERNAL_URL` (where `/verify` links go), every field present (`''` when unused).
 */
export function emailDataOf(message: MailMessage, apiExternalUrl: string): EmailData {
  return {
    token: message.token,
    token_hash: message.tokenHash,
    redirect_to: message.redirectTo,
    email_action_type: ACTION_TYPES[message.kind] ?? message.kind,
    site_url: apiExternalUrl,
    token_new: '',
    token_hash_new: '',
    old_email: message.oldEmail ?? '',
    old_phone: message.oldPhone ?? '',
    provider: message.provider ?? '',
    factor_type: message.factorType ?? '',
  }
}
