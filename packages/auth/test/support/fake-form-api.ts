import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import { startHttpServer } from '@gatehouse/testing'

/** A request a {@link FakeApi} received. */
export interface SeenRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** The form-encoded body, decoded. */
  readonly form: Record<string, string>
}

/** A status and JSON body the fake answers. */
export type FakeReply = readonly [status: number, body: unknown]

/**
 * What a third-party API looks like to the fake: where it listens, how it authenticates, and
 * its answers on success and on failure (its real wire shapes).
 */
export interface ApiDescription {
  /** The path of the endpoint (`/sms/json`). */
  readonly path: string
  /** Whether the request carries the expected credentials (header or form fields). */
  authorized(request: SeenRequest): boolean
  /** The provider's answer to an unauthenticated request. */
  readonly unauthorized: FakeReply
  /** The provider's answer when it accepts the request. */
  success(request: SeenRequest): FakeReply
  /** The provider's answer when it refuses the request. */
  readonly failure: FakeReply
}

/** How the fake answers the next requests. */
export type FakeMode = 'success' | 'failure' | 'hang'

/** A running fake API, see {@link startFakeApi}. */
export interface FakeApi {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string
  /** Every request received, oldest first. */
  readonly requests: SeenRequest[]
  /** Answers from now on with the description's success, failure, or not at all. */
  mode: FakeMode
  close(): Promise<void>
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function send(response: ServerResponse, [status, body]: FakeReply): void {
  response.writeHead(status, { 'content-type': 'application/json' })
  response.end(JSON.stringify(body))
}

/**
 * Starts a local HTTP server speaking a third-party API as `description` describes it (an SMS
 * provider, a captcha siteverify endpoint; several descriptions for an API of several
 * endpoints, such as Twilio Verify's): it records each request, answers 404 off their paths,
 * refuses wrong credentials as the provider does, and otherwise answers as {@link FakeApi.mode}
 * says.
 */
export async function startFakeApi(
  descriptions: ApiDescription | readonly ApiDescription[],
): Promise<FakeApi> {
  const endpoints: readonly ApiDescription[] =
    'path' in descriptions ? [descriptions] : descriptions
  const requests: SeenRequest[] = []
  const fake = {
    mode: 'success' as FakeMode,
    requests,
  }
  const server = await startHttpServer((request, response) => {
    void readBody(request).then((body) => {
      const seen: SeenRequest = {
        method: request.method ?? '',
        path: new URL(request.url ?? '/', 'http://fake').pathname,
        headers: request.headers,
        form: Object.fromEntries(new URLSearchParams(body)),
      }
      requests.push(seen)
      const description = endpoints.find((d) => d.path === seen.path)
      if (seen.method !== 'POST' || !description) {
        send(response, [404, { error: 'not found' }])
      } else if (!description.authorized(seen)) {
        send(response, description.unauthorized)
      } else if (fake.mode === 'success') {
        send(response, description.success(seen))
      } else if (fake.mode === 'failure') {
        send(response, description.failure)
      }
      // 'hang': never answers; close() drops the connection.
    })
  })
  return Object.assign(fake, { url: server.url, close: () => server.close() })
}
