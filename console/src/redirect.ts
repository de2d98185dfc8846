// Where sign-in sends the user back to (`?redirect=`): only a path of this console, never another
// origin (`//evil.example`, `/\evil.example`, `https:`), nor sign-in itself; otherwise the live doors.
export function safeRedirect(value: unknown): string {
  const path = Array.isArray(value) ? value[0] : value;
  if (
    typeof path !== 'string' ||
    !path.startsWith('/') ||
    path.startsWith('//') ||
    path.startsWith('/\\') ||
    path.startsWith('/signin')
  )
    return '/doors';
  return path;
}
