/* eslint-disable no-console -- examples print what they get */
// Resource Owner Password Credentials grant (OAuth 2.0 only; omitted from OAuth 2.1).
import { Client } from '@gatehouse/oauth2'

const client = new Client('app', 'app-secret', { site: 'https://legacy.example.com' })
const token = await client.password.getToken('ann', 'correct horse', { scope: 'profile' })
console.log(token.token !== '', token.refreshToken !== undefined)
