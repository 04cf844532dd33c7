/**
 * An in-memory `oidc-provider` adapter that also reads client ID metadata documents
 * (draft-ietf-oauth-client-id-metadata-document): a `client_id` that is an http(s) URL is looked
 * up by fetching the document there, whose `client_id` must be that URL. oidc-provider has no
 * such support of its own; this gives the tests a real server that does.
 */
import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider'

interface Entry {
  payload: AdapterPayload
  expiresAt: number | undefined
}

/** An adapter factory: one store per provider, one adapter per model. */
export function cimdAdapterFactory(): AdapterFactory {
  const store = new Map<string, Entry>()
  const live = (key: string): AdapterPayload | undefined => {
    const entry = store.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt !== undefined && entry.expiresAt <= Date.now()) {
      store.delete(key)
      return undefined
    }
    return entry.payload
  }
  return (model: string): Adapter => {
    const key = (id: string) => `${model}:${id}`
    return {
      upsert(id, payload, expiresIn) {
        store.set(key(id), {
          payload,
          expiresAt: expiresIn === undefined ? undefined : Date.now() + expiresIn * 1000,
        })
        if (payload.uid !== undefined)
          store.set(`${model}:uid:${payload.uid}`, {
            payload: { id },
            expiresAt: undefined,
          })
        if (payload.userCode !== undefined)
          store.set(`${model}:userCode:${payload.userCode}`, {
            payload: { id },
            expiresAt: undefined,
          })
        return Promise.resolve()
      },
      async find(id) {
        if (model === 'Client' && /^https?:\/\//.test(id) && live(key(id)) === undefined) {
          const response = await fetch(id, { redirect: 'error' })
          if (!response.ok) return undefined
          const document = (await response.json()) as AdapterPayload
          return document.client_id === id ? document : undefined
        }
        return live(key(id))
      },
      findByUid(uid) {
        const ref = live(`${model}:uid:${uid}`)
        return Promise.resolve(ref === undefined ? undefined : live(key(String(ref.id))))
      },
      findByUserCode(userCode) {
        const ref = live(`${model}:userCode:${userCode}`)
        return Promise.resolve(ref === undefined ? undefined : live(key(String(ref.id))))
      },
      consume(id) {
        const payload = live(key(id))
        if (payload !== undefined) payload.consumed = Math.floor(Date.now() / 1000)
        return Promise.resolve()
      },
      destroy(id) {
        store.delete(key(id))
        return Promise.resolve()
      },
      revokeByGrantId(grantId) {
        for (const [k, entry] of store) {
          if (entry.payload.grantId === grantId) store.delete(k)
        }
        return Promise.resolve()
      },
    }
  }
}
