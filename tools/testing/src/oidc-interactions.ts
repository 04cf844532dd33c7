/**
 * Headless login and consent for a test `oidc-provider`: its interaction pages answered in place,
 * as a person clicking "sign in" and "allow" would.
 */
import type Provider from 'oidc-provider'

/** Who logs in, and whether the next interaction is denied. */
export interface HeadlessInteractionOptions {
  /** The account id of the person logging in (called once per login prompt). */
  login(): string
  /**
   * True to end this interaction with `access_denied` ("End-User aborted interaction"), as a
   * person refusing consent. @default never
   */
  deny?(): boolean
}

/**
 * Answers every `/interaction/…` request of `provider`: a login prompt logs in
 * `options.login()`; a consent prompt grants every OIDC scope, claim and resource scope asked
 * for; `options.deny()` ends the interaction with `access_denied` instead.
 */
export function addHeadlessInteractions(
  provider: Provider,
  options: HeadlessInteractionOptions,
): void {
  provider.use(async (ctx, next) => {
    if (!ctx.path.startsWith('/interaction/')) {
      await next()
      return
    }
    const details = await provider.interactionDetails(ctx.req, ctx.res)
    ctx.respond = false
    if (options.deny?.() === true) {
      await provider.interactionFinished(ctx.req, ctx.res, {
        error: 'access_denied',
        error_description: 'End-User aborted interaction',
      })
      return
    }
    if (details.prompt.name === 'login') {
      await provider.interactionFinished(
        ctx.req,
        ctx.res,
        { login: { accountId: options.login() } },
        { mergeWithLastSubmission: false },
      )
      return
    }
    const grant =
      details.grantId === undefined
        ? new provider.Grant({
            accountId: details.session?.accountId,
            clientId: String(details.params.client_id),
          })
        : await provider.Grant.find(details.grantId)
    if (grant === undefined) throw new Error('grant not found')
    const missing = details.prompt.details as {
      missingOIDCScope?: string[]
      missingOIDCClaims?: string[]
      missingResourceScopes?: Record<string, string[]>
    }
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '))
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims)
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '))
    }
    const grantId = await grant.save()
    await provider.interactionFinished(
      ctx.req,
      ctx.res,
      { consent: { grantId } },
      { mergeWithLastSubmission: true },
    )
  })
}
