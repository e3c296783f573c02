/**
 * Quiet hours: a daily window, in a time zone, in which an alert is held and sent when the window
 * ends. Times are "HH:MM"; a start after the end spans midnight. The window's end is found in
 * local minutes, so on a day the clocks change it may fall up to an hour off.
 */

export interface QuietWindow {
  start: string;
  end: string;
  timeZone: string;
}

/** Whether `timeZone` is one the runtime's Intl knows (IANA names). */
export function isTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
    return true;
  } catch {
    return false;
  }
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** The local time at `at` in `timeZone`, in minutes since midnight (with seconds as a fraction). */
function localMinutes(at: Date, timeZone: string): number {
  const parts = new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", hour: "2-digit", minute: "2-digit", second: "2-digit" }).formatToParts(at);
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return get("hour") * 60 + get("minute") + get("second") / 60;
}

/** When the window that holds `at` ends, or undefined when `at` is outside it (or the window is empty). */
export function quietUntil(window: QuietWindow, at: Date): Date | undefined {
  const start = minutesOf(window.start);
  const end = minutesOf(window.end);
  if (start === end) return undefined;
  const now = localMinutes(at, window.timeZone);
  const inside = start < end ? now >= start && now < end : now >= start || now < end;
  if (!inside) return undefined;
  const wait = (end - now + 1440) % 1440;
  return new Date(at.getTime() + Math.ceil(wait * 60) * 1000);
}
