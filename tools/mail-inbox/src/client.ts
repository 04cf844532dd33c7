/**
 * The inbox page's only script, served as `/inbox.js` (the pages' CSP allows no other): live
 * updates from `/api/events` (Server-Sent Events) refresh the count and the list, the search
 * filters as you type, and the "Delete" buttons call the API. It builds no HTML from mail data:
 * the list is swapped in from the server's own escaped page (`listPage`), and text goes through
 * `textContent`.
 *
 * @module
 */

/** The script's source (plain ES2020, no build step). */
export const CLIENT_SCRIPT = `'use strict'
;(() => {
  const count = document.getElementById('count')
  const list = document.getElementById('list')
  const search = document.querySelector('input[name=q]')
  const mailId = document.body.dataset.mail
  const label = (n) => (n === 1 ? '1 mail' : n + ' mails')
  const listUrl = () => (search && search.value !== '' ? '/?q=' + encodeURIComponent(search.value) : '/')

  let pending = Promise.resolve()
  const refresh = () => {
    if (!list) return pending
    pending = pending.then(async () => {
      const response = await fetch(listUrl(), { headers: { accept: 'text/html' } })
      if (!response.ok) return
      const page = new DOMParser().parseFromString(await response.text(), 'text/html')
      const fresh = page.getElementById('list')
      if (fresh) list.replaceChildren(...fresh.childNodes)
      const freshCount = page.getElementById('count')
      if (freshCount && count) count.textContent = freshCount.textContent
      document.title = page.title
    }).catch(() => undefined)
    return pending
  }

  if (search) {
    let timer
    search.addEventListener('input', () => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        history.replaceState(null, '', listUrl())
        void refresh()
      }, 120)
    })
    search.form.addEventListener('submit', (event) => {
      event.preventDefault()
      history.replaceState(null, '', listUrl())
      void refresh()
    })
  }

  document.addEventListener('click', async (event) => {
    const button = event.target instanceof Element ? event.target.closest('button') : null
    if (!button) return
    let path
    if (button.hasAttribute('data-delete-all')) path = '/api/mails'
    else if (button.dataset.delete) path = '/api/mails/' + encodeURIComponent(button.dataset.delete)
    else return
    button.disabled = true
    const response = await fetch(path, { method: 'DELETE' })
    if (response.ok && button.dataset.then) location.assign(button.dataset.then)
    else await refresh()
    button.disabled = false
  })

  const events = new EventSource('/api/events')
  events.addEventListener('open', () => void refresh())
  events.addEventListener('message', (message) => {
    const event = JSON.parse(message.data)
    if (count) count.textContent = label(event.count)
    if (mailId && (event.type === 'cleared' || (event.type === 'deleted' && String(event.id) === mailId))) {
      const notice = document.createElement('p')
      notice.className = 'notice'
      notice.setAttribute('role', 'status')
      notice.textContent = 'This mail was deleted.'
      document.querySelector('main')?.prepend(notice)
      events.close()
    }
    void refresh()
  })
})()
`
