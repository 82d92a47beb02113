/** What a browser says of the system it runs on. */
interface PlatformInfo {
  platform?: string
  userAgent?: string
  userAgentData?: { platform?: string }
}

/** isApple tells whether the page runs on macOS or iOS, where ⌘ (Meta) is the command key. */
export function isApple(nav: PlatformInfo | undefined = typeof navigator === 'undefined' ? undefined : (navigator as PlatformInfo)): boolean {
  if (!nav) return false
  const platform = nav.userAgentData?.platform || nav.platform || nav.userAgent || ''
  return /mac|iphone|ipad|ipod/i.test(platform)
}

/** commandKey names the key that submits with Enter: ⌘ on a Mac, Ctrl elsewhere. */
export function commandKey(apple: boolean = isApple()): string {
  return apple ? '⌘' : 'Ctrl'
}

/** isSubmitKey tells whether a key press submits a form: Ctrl+Enter, or ⌘+Enter on a Mac. */
export function isSubmitKey(e: Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'metaKey' | 'isComposing'>): boolean {
  return e.key === 'Enter' && !e.isComposing && (e.ctrlKey || e.metaKey)
}
