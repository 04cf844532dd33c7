import { describe, expect, it } from 'vitest'
import { onOrigin } from '../form-post.js'
import { smsText } from './sms.js'

describe('smsText', () => {
  it('puts the code in SMS_TEMPLATE as text, with Go trim markers, dropping other actions', () => {
    expect(smsText('Your code is {{ .Code }}', '123456')).toBe('Your code is 123456')
    expect(smsText('Code:  {{- .Code -}}  <b>&', '42')).toBe('Code:42<b>&')
    // Actions other than .Code vanish, the text between them stays (as in mail templates).
    expect(smsText('{{ .Token }}{{if .Code}}x{{end}}{{.Code}}', '7')).toBe('x7')
  })
})

describe('onOrigin', () => {
  it("keeps the provider's path and takes only scheme, host and port from the setting", () => {
    expect(onOrigin('http://127.0.0.1:8080/proxy/path?q=1', '/sms/json')).toBe(
      'http://127.0.0.1:8080/sms/json',
    )
    expect(onOrigin('https://api.twilio.com', '/2010-04-01/Accounts/AC1/Messages.json')).toBe(
      'https://api.twilio.com/2010-04-01/Accounts/AC1/Messages.json',
    )
  })
})
