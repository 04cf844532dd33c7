/**
 * The built-in HTML body of every kind of mail, used when `MAILER_TEMPLATES_<KIND>` is empty or
 * its URL cannot be fetched. Same placeholders as upstream's defaults (the spec's table of
 * variables per kind); our own wording.
 *
 * @module
 */
import type { MailKind } from './mailer.js'

const withCode = (intro: string, action: string): string =>
  `<h2>${action}</h2>
<p>${intro}</p>
<p><a href="{{ .ConfirmationURL }}">${action}</a></p>
<p>Or enter this code: {{ .Token }}</p>
`

const notice = (title: string, body: string): string =>
  `<h2>${title}</h2>
<p>${body}</p>
<p>If you did not make this change, contact support and secure your account at once.</p>
`

/** Built-in body templates by kind. */
export const DEFAULT_TEMPLATES: Readonly<Record<MailKind, string>> = Object.freeze({
  invite: withCode(
    'You have been invited to create an account on {{ .SiteURL }}. Follow the link to accept.',
    'Accept the invitation',
  ),
  confirmation: withCode(
    'Follow the link to confirm the address {{ .Email }}.',
    'Confirm your email address',
  ),
  recovery: withCode('Follow the link to choose a new password.', 'Reset your password'),
  magic_link: withCode('Follow the link to sign in to {{ .SiteURL }}.', 'Sign in'),
  email_change: withCode(
    'Follow the link to change your email address from {{ .Email }} to {{ .NewEmail }}.',
    'Confirm the new address',
  ),
  reauthentication: `<h2>Confirm it is you</h2>
<p>Enter this code: {{ .Token }}</p>
`,
  password_changed_notification: notice(
    'Your password was changed',
    'The password of the account {{ .Email }} was just changed.',
  ),
  email_changed_notification: notice(
    'Your email address was changed',
    'The email address of your account was changed from {{ .OldEmail }} to {{ .Email }}.',
  ),
  phone_changed_notification: notice(
    'Your phone number was changed',
    'The phone number of the account {{ .Email }} was changed from {{ .OldPhone }} to {{ .Phone }}.',
  ),
  identity_linked_notification: notice(
    'A sign-in method was linked',
    'A {{ .Provider }} identity was linked to the account {{ .Email }}.',
  ),
  identity_unlinked_notification: notice(
    'A sign-in method was removed',
    'The {{ .Provider }} identity was removed from the account {{ .Email }}.',
  ),
  mfa_factor_enrolled_notification: notice(
    'A verification method was added',
    'A {{ .FactorType }} verification method was added to the account {{ .Email }}.',
  ),
  mfa_factor_unenrolled_notification: notice(
    'A verification method was removed',
    'A {{ .FactorType }} verification method was removed from the account {{ .Email }}.',
  ),
  new_sign_in_notification: notice(
    'A new sign-in',
    'The account {{ .Email }} was just signed in to from a new device: {{ .UserAgent }} at {{ .IP }}. If it was not you, change your password.',
  ),
  mfa_recovery_code_used_notification: notice(
    'A recovery code was used',
    'One of the recovery codes of the account {{ .Email }} was just used to sign in. If it was not you, change your password and generate new recovery codes.',
  ),
})

/**
 * Default `MAILER_SUBJECTS_<KIND>`: the spec's table (upstream's current defaults for the six
 * flow mails).
 */
export const DEFAULT_SUBJECTS: Readonly<Record<MailKind, string>> = Object.freeze({
  invite: "You've been invited",
  confirmation: 'Confirm your email address',
  recovery: 'Reset your password',
  magic_link: 'Your sign-in link',
  email_change: 'Confirm your new email address',
  reauthentication: '{{ .Token }} is your verification code',
  password_changed_notification: 'Your password was changed',
  email_changed_notification: 'Your email address was changed',
  phone_changed_notification: 'Your phone number was changed',
  identity_linked_notification: 'A new sign-in method was linked to your account',
  identity_unlinked_notification: 'A sign-in method was removed from your account',
  mfa_factor_enrolled_notification: 'A new verification method was added to your account',
  mfa_factor_unenrolled_notification: 'A verification method was removed from your account',
  new_sign_in_notification: 'A new sign-in to your account',
  mfa_recovery_code_used_notification: 'A recovery code was used to sign in to your account',
})
