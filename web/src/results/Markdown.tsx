import DOMPurify, { type Config } from 'dompurify'
import { Marked } from 'marked'
import { useMemo } from 'react'

/** escapeHTML makes text safe as HTML text. */
function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

// Images would be fetched from wherever the text points, so they show
// their alternative text instead; task-list boxes are marks, not inputs.
const marked = new Marked({
  async: false,
  gfm: true,
  renderer: {
    image: ({ text }) => escapeHTML(text),
    checkbox: ({ checked }) => (checked ? '☑ ' : '☐ '),
  },
})

/** The elements Markdown renders to; everything else is dropped. */
const ALLOWED_TAGS = [
  'a', 'p', 'br', 'hr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'strong', 'em', 'b', 'i', 'del', 's', 'code', 'pre', 'blockquote',
  'ul', 'ol', 'li', 'table', 'thead', 'tbody', 'tr', 'th', 'td',
]

/** LINK_SCHEMES are the only schemes a link may have. */
const LINK_SCHEMES = new Set(['http:', 'https:', 'mailto:'])

/** ANCHOR is the id of a heading anchor in a report, and a link to one is "#" and it. */
const ANCHOR = /^sec-[a-z0-9-]{1,64}$/

const config: Config = {
  ALLOWED_TAGS,
  ALLOWED_ATTR: ['href', 'title', 'id', 'align', 'start'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  // Attributes that hold no URL, so that the regular expression above
  // does not apply to them.
  ADD_URI_SAFE_ATTR: ['align', 'start'],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  ALLOW_UNKNOWN_PROTOCOLS: false,
  FORBID_TAGS: ['script', 'style', 'iframe', 'frame', 'object', 'embed', 'form', 'input', 'button', 'textarea', 'select', 'svg', 'math', 'img', 'link', 'meta', 'base'],
  FORBID_ATTR: ['style', 'target', 'rel', 'srcset', 'action', 'formaction'],
}

/**
 * linkKind says where a link to href goes: "web" for an http or https
 * URL, "mail" for a mailto URL, "anchor" for a report's own heading, and
 * null for anywhere else, where no link may go.
 */
export function linkKind(href: string): 'web' | 'mail' | 'anchor' | null {
  if (href.startsWith('#')) return ANCHOR.test(href.slice(1)) ? 'anchor' : null
  let protocol: string
  try {
    protocol = new URL(href).protocol
  } catch {
    return null
  }
  if (!LINK_SCHEMES.has(protocol)) return null
  return protocol === 'mailto:' ? 'mail' : 'web'
}

const purify = DOMPurify(window)

purify.addHook('uponSanitizeAttribute', (_node, data) => {
  if (data.attrName === 'id' && !ANCHOR.test(data.attrValue)) data.keepAttr = false
})

purify.addHook('afterSanitizeAttributes', (node) => {
  // A table scrolls sideways on its own when it is wider than the page:
  // keyboard users reach it, and scroll it, with Tab.
  if (node.tagName === 'TABLE') {
    node.setAttribute('tabindex', '0')
    return
  }
  if (node.tagName !== 'A') return
  const href = node.getAttribute('href')
  if (href === null) return
  const kind = linkKind(href)
  if (kind === null) {
    node.removeAttribute('href')
    return
  }
  if (kind === 'web') {
    node.setAttribute('target', '_blank')
    node.setAttribute('rel', 'noopener noreferrer')
  }
})

/**
 * renderMarkdown turns Markdown into HTML that is safe to insert: only
 * text elements, lists, tables and links are kept; no scripts, styles,
 * frames, forms, images, SVG or event handlers; links only to http, https
 * and mailto URLs or the report's own headings, and a web link opens in
 * a new tab with rel="noopener noreferrer".
 */
export function renderMarkdown(md: string): string {
  const html = marked.parse(md) as string
  return purify.sanitize(html, config) as string
}

/** Markdown shows a Markdown document, sanitized. */
export function Markdown({ source, label }: { source: string; label?: string }) {
  const html = useMemo(() => renderMarkdown(source), [source])
  return <div className="markdown" aria-label={label} dangerouslySetInnerHTML={{ __html: html }} />
}
