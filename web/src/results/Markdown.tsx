import DOMPurify from 'dompurify'
import { marked } from 'marked'
import { useMemo } from 'react'

/** renderMarkdown turns Markdown into HTML that is safe to insert: scripts, handlers and javascript: links are removed. */
export function renderMarkdown(md: string): string {
  const html = marked.parse(md, { async: false, gfm: true }) as string
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true } })
}

/** Markdown shows a Markdown document, sanitized. */
export function Markdown({ source, label }: { source: string; label?: string }) {
  const html = useMemo(() => renderMarkdown(source), [source])
  return <div className="markdown" aria-label={label} dangerouslySetInnerHTML={{ __html: html }} />
}
